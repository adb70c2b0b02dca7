-- wrk script of the inbound part (bench/pipeline.ts, through bench/inbound.ts runWrk):
-- BlueBubbles `new-message` webhooks, a new body per request, a fifth of the requests
-- byte-identical redeliveries of an earlier message, as a BlueBubbles server retrying sends them.
--   wrk -t1 -cN -dS -s bench/inbound.lua URL -- SPEC
-- SPEC is a Lua file written by bench/inbound.ts: the body's pieces around its variable values
-- (cut from what inbound.ts newMessageBody builds, so the bytes are exactly that shape), the
-- GUID prefix of this run, the first row ID and creation time. Message k's body depends on k
-- alone, so a redelivery regenerates the same bytes from an earlier k instead of keeping every
-- body in memory. The figures (per thread: messages generated, repeats, statuses, and what the
-- route answered it did) come out of done() as one BENCH_JSON line.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

-- Per thread (globals, so that done() can read them with thread:get).
counter = 0
repeats = 0
statuses = {}
outcomes = {}

local spec, nthreads

function init(args)
  spec = dofile(args[1])
  -- From the spec, not counted in setup(): a thread may start sending before the next one is set up.
  nthreads = spec.threads
  -- Every run sends the same pattern of repeats.
  math.randomseed(spec.seed + id)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

-- Message k of the whole run (threads take every nthreads-th k).
local function body(k)
  local pieces = spec.pieces[(k % spec.senders) + 1]
  local values = {
    guid = spec.prefix .. string.format("%012X", k),
    row = string.format("%.0f", spec.firstRow + k),
    date = string.format("%.0f", spec.start + k),
    text = "inbound bench " .. k,
  }
  local out = { pieces[1] }
  for i, name in ipairs(spec.order) do
    out[#out + 1] = values[name]
    out[#out + 1] = pieces[i + 1]
  end
  return table.concat(out)
end

function request()
  if counter > 0 and math.random() < 0.2 then
    -- Half a redelivery of one of the last 32 messages (often still in flight in the server: the
    -- concurrent path), half of any earlier one (already stored: the lookup).
    local from
    if math.random() < 0.5 then
      from = counter - 1 - math.floor(math.random() * math.min(32, counter))
    else
      from = math.floor(math.random() * counter)
    end
    repeats = repeats + 1
    return wrk.format(nil, nil, nil, body(from * nthreads + id))
  end
  local k = counter * nthreads + id
  counter = counter + 1
  return wrk.format(nil, nil, nil, body(k))
end

function response(status, headers, resBody)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 200 then
    -- {"object":"inbound_receipt","received":{"stored":1},...}: the counts are its only numbers.
    for name, n in string.gmatch(resBody, '"(%a+)":(%d+)') do
      outcomes[name] = (outcomes[name] or 0) + tonumber(n)
    end
  end
end

local function object(t)
  local parts = {}
  for k, v in pairs(t) do parts[#parts + 1] = string.format('"%s":%d', tostring(k), v) end
  return "{" .. table.concat(parts, ",") .. "}"
end

function done(summary, latency, requests)
  local per = {}
  for _, t in ipairs(threads) do
    per[#per + 1] = string.format('{"id":%d,"unique":%d,"repeats":%d,"statuses":%s,"outcomes":%s}',
      t:get("id"), t:get("counter"), t:get("repeats"), object(t:get("statuses")), object(t:get("outcomes")))
  end
  local e = summary.errors
  io.write(string.format('BENCH_JSON {"threads":[%s],"requests":%d,"duration_us":%d,"socket_errors":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d}\n',
    table.concat(per, ","), summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
