import { parseArgs } from "node:util";
import { Relay } from "../client.js";
import { AuthenticationError, AuthorizationError, ConnectionError, RelayError } from "../errors.js";
import type { Capacity, LineCapacity, Message, OutboxItem } from "../generated.js";
import { sandboxSmsLink } from "../sandbox.js";
import { signWebhook } from "../webhooks.js";
import { configDir, DEFAULT_BASE_URL, listenSecret, readConfig, removeConfig, writeConfig } from "./config.js";
import { serveMcpOverStdio } from "./mcp.js";
import { encodeQr, renderQr } from "./qr.js";
import { spinner, style, type Style } from "./ui.js";
import { EXIT, type CliIo, UsageError, REACTION_TYPES, isReactionType, COMMANDS, help, OPTIONS, type Values, table, time, need, limitOf, fileArg, recentIds, sendAtOf } from "./args.js";

// The `relay` command. Human output by default, `--json` for scripts; exit codes scripts can
// rely on (EXIT). runCli takes its I/O as arguments, so tests drive it in-process. The command
// table, options and argument helpers are in args.ts.

export { EXIT, type CliIo };

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const ui = style(io.color === true);
  const out = (value: unknown, human: () => string) => io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
  let json = false;
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    json = values.json === true;
    const [command, sub, arg] = positionals;
    if (values.help || !command) {
      io.stdout(`${help(command)}\n`);
      return command || values.help ? EXIT.ok : EXIT.usage;
    }
    if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command '${command}'`);
    const dir = configDir(io.env);
    if (command === "logout") {
      const file = await removeConfig(dir);
      out({ config: file, removed: file !== null }, () => (file ? `Logged out: deleted ${file}.` : "Not logged in: no config file."));
      return EXIT.ok;
    }
    const saved = await readConfig(dir);
    const baseUrl = values["base-url"] ?? io.env.RELAY_BASE_URL ?? saved.baseUrl ?? DEFAULT_BASE_URL;
    const apiKey = values.key ?? io.env.RELAY_API_KEY ?? saved.apiKey;
    if (command === "mcp") {
      // Without a key it still serves, answering each request with how to log in: a desktop app shows that, not a dead process.
      if (!io.stdin) throw new Error("relay mcp needs stdin");
      await serveMcpOverStdio({ baseUrl, apiKey, stdin: io.stdin, stdout: io.stdout, stderr: io.stderr, fetch: io.fetch, signal: io.signal });
      return EXIT.ok;
    }
    if (!apiKey) {
      io.stderr(`No API key. Run \`relay login --key sk_live_...\` (create a key in the dashboard at ${baseUrl}/dashboard/keys), or set RELAY_API_KEY.\n`);
      return EXIT.auth;
    }
    const relay = new Relay({ apiKey, baseUrl, fetch: io.fetch });
    const signal = io.signal;

    /** outbox.wait with a spinner (human output) showing the item's status as it changes; timeoutMs: outbox.wait's (60 s) by default. */
    const waitFor = async (id: string, timeoutMs?: number): Promise<OutboxItem> => {
      const progress = json ? null : spinner(io.stderr, io.interactive === true, `Waiting for ${id}: pending`);
      try {
        return await relay.outbox.wait(id, {
          signal,
          timeoutMs,
          onPoll: (item) => progress?.update(`Waiting for ${id}: ${item.status}${item.hold_reason ? ` (${item.hold_reason})` : ""}${item.attempts > 1 ? ` (attempt ${item.attempts})` : ""}`),
        });
      } finally {
        progress?.stop();
      }
    };
    const finalStatus = (item: OutboxItem) => {
      out(item, () => `${item.id}: ${ui.status(item.status)}${held(item)}${item.error ? ` (${item.error})` : ""}, ${item.attempts} attempt(s)`);
      return item.status === "failed" ? EXIT.deliveryFailed : EXIT.ok;
    };

    switch (command) {
      case "login": {
        const lines = await relay.lines.list({ limit: 100 }, { signal });
        // listen's saved secrets stay (each belongs to one server and key).
        const file = await writeConfig(dir, { ...saved, apiKey, baseUrl });
        out({ base_url: baseUrl, lines: lines.data.length, config: file }, () => `${ui.green("✓")} Logged in to ${baseUrl}: ${lines.data.length} line(s). Saved to ${file}.`);
        return EXIT.ok;
      }
      case "lines": {
        const page = await relay.lines.list({ limit: limitOf(values) ?? 100 }, { signal });
        out(page, () =>
          table(
            page.data.map((l) => ({ ...l, active: l.is_active ? "yes" : "no", health: health(ui, l.status, l.status_reason), advanced: l.advanced_features ? "yes" : "no" })),
            ["handle", "label", "service", "provider", "health", "advanced", "active", "id"],
            ui,
          ),
        );
        return EXIT.ok;
      }
      case "pools": {
        const page = await relay.pools.list({ signal });
        // Lines by handle, as every command names them (an ID outside the first 100 lines stays an ID).
        const handles = new Map(page.data.length ? (await relay.lines.list({ limit: 100 }, { signal })).data.map((l) => [l.id, l.handle]) : []);
        out(page, () =>
          table(
            page.data.map((p) => ({ ...p, lines: p.line_ids.map((id) => handles.get(id) ?? id).join(", "), created: time(p.created_at) })),
            ["id", "name", "lines", "created"],
            ui,
          ),
        );
        return EXIT.ok;
      }
      case "capacity": {
        if (!sub) throw new UsageError("usage: relay capacity LINE_OR_POOL");
        const capacity = await relay.capacity.get(sub, { signal });
        out(capacity, () => capacityText(capacity, ui));
        return EXIT.ok;
      }
      case "chats": {
        const page = await relay.chats.list({ from: need(values, "from"), limit: limitOf(values) }, { signal });
        out(page, () => table(page.data.map((c) => ({ ...c, last: time(c.last_message_at) })), ["identifier", "name", "last", "id"], ui));
        return EXIT.ok;
      }
      case "messages": {
        if (values.follow) return await follow(relay, values, io, ui, json);
        const page = await relay.messages.list({ from: need(values, "from"), to: values.to, limit: limitOf(values) }, { signal });
        out(page, () => table(page.data.map(messageRow), ["time", "from", "text"], ui));
        return EXIT.ok;
      }
      case "send": {
        const from = need(values, "from");
        const to = need(values, "to");
        if (values.audio && (values.attach || values.text)) throw new UsageError("--audio sends a voice memo alone: no --text or --attach with it");
        if (!values.audio && !values.attach && !values.text) throw new UsageError("pass --text, --attach or --audio");
        // Checked before anything is uploaded or sent.
        const sendAt = values.at === undefined ? undefined : sendAtOf(values.at);
        let accepted;
        if (values.audio) {
          const file = await fileArg(values.audio);
          const uploaded = await relay.files.upload(file.bytes, { filename: file.filename }, { signal });
          accepted = await relay.audioMessages.send({ from, to, audio_message: uploaded.id, reply_to: values["reply-to"], send_at: sendAt }, { signal });
        } else {
          const file = values.attach ? await fileArg(values.attach) : null;
          const uploaded = file ? await relay.files.upload(file.bytes, { filename: file.filename }, { signal }) : null;
          accepted = await relay.messages.send(
            { from, to, text: values.text, attachments: uploaded ? [uploaded.id] : undefined, reply_to: values["reply-to"], send_at: sendAt },
            { signal },
          );
        }
        if (!values.wait) {
          out(accepted, () =>
            sendAt === undefined
              ? `Accepted ${accepted.id} (${ui.status("pending")}). Follow it with: relay outbox get ${accepted.id} --wait`
              : `Scheduled ${accepted.id} for ${time(sendAt)} UTC (${ui.status("pending")}). Call it off with: relay outbox cancel ${accepted.id}`,
          );
          return EXIT.ok;
        }
        // A scheduled send is waited for until a minute past its time.
        return finalStatus(await waitFor(accepted.id, sendAt === undefined ? undefined : sendAt - Date.now() + 60_000));
      }
      case "outbox": {
        if (!arg || (sub !== "get" && sub !== "cancel" && sub !== "reschedule")) {
          throw new UsageError("usage: relay outbox get OBX_ID [--wait] | cancel OBX_ID | reschedule OBX_ID --at TIME");
        }
        if (sub === "cancel") {
          const item = await relay.outbox.cancel(arg, { signal });
          out(item, () => `Canceled ${item.id}: it will not be sent.`);
          return EXIT.ok;
        }
        if (sub === "reschedule") {
          const item = await relay.outbox.reschedule(arg, sendAtOf(need(values, "at")), { signal });
          out(item, () => `Rescheduled ${item.id} for ${time(item.not_before)} UTC (${ui.status(item.status)}).`);
          return EXIT.ok;
        }
        return finalStatus(values.wait ? await waitFor(arg) : await relay.outbox.get(arg, { signal }));
      }
      case "react": {
        const type = need(values, "type");
        if (!isReactionType(type)) throw new UsageError(`--type must be one of ${REACTION_TYPES.join(", ")}`);
        const accepted = await relay.reactions.send({ from: need(values, "from"), to: need(values, "to"), message_id: need(values, "message"), type }, { signal });
        if (values.wait) return finalStatus(await waitFor(accepted.id));
        out(accepted, () => `Accepted ${accepted.id} (${ui.status("pending")}).`);
        return EXIT.ok;
      }
      case "typing": {
        const accepted = await relay.typing.send({ from: need(values, "from"), to: need(values, "to"), state: values.off ? "off" : "on" }, { signal });
        out(accepted, () => `Typing ${values.off ? "stopped" : "started"}: ${accepted.id}.`);
        return EXIT.ok;
      }
      case "read": {
        const accepted = await relay.receipts.send({ from: need(values, "from"), to: need(values, "to") }, { signal });
        out(accepted, () => `Marked read: ${accepted.id}.`);
        return EXIT.ok;
      }
      case "files": {
        if (sub !== "upload" || !arg) throw new UsageError("usage: relay files upload FILE");
        const file = await fileArg(arg);
        const uploaded = await relay.files.upload(file.bytes, { filename: file.filename }, { signal });
        out(uploaded, () => `${uploaded.id}  ${uploaded.filename}  ${uploaded.mime_type}  ${uploaded.size} bytes`);
        return EXIT.ok;
      }
      case "webhooks":
        return await webhooks(relay, sub, arg, values, out, ui, signal);
      case "sandbox":
        return await sandbox(relay, sub, values, io, ui, out, json);
      case "listen":
        return await listen(relay, values, io, ui, json, { dir, baseUrl, apiKey });
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (err) {
    if (io.signal?.aborted) return EXIT.interrupted; // Ctrl-C mid-request: not an error to report
    if (err instanceof UsageError || (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      io.stderr(`${ui.red(err.message)}\nRun \`relay --help\` for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof RelayError) {
      const where = err.param ? ` (${err.param})` : "";
      const hint =
        err instanceof AuthenticationError
          ? " Check the key (relay login --key ...) and --base-url."
          : err instanceof AuthorizationError && err.code === "insufficient_scope"
            ? " Create a key with that scope in the dashboard."
            : err.code === "contact_has_not_messaged"
              ? " The contact must message the line first."
              : err instanceof ConnectionError
                ? " Is the server running at that --base-url?"
                : "";
      if (json) io.stderr(`${JSON.stringify({ error: { type: err.type, code: err.code, message: err.message, param: err.param }, request_id: err.requestId })}\n`);
      else io.stderr(`${ui.red("Error:")} ${err.message}${where} ${ui.dim(`[${err.code}${err.requestId ? `, ${err.requestId}` : ""}]`)}${hint}\n`);
      return err instanceof AuthenticationError ? EXIT.auth : err instanceof ConnectionError ? EXIT.network : EXIT.apiError;
    }
    throw err;
  }
}

/** A line's provider health, coloured: green connected, yellow degraded, red disconnected. */
const health = (ui: Style, status: string, reason?: string | null) =>
  (status === "connected" ? ui.green : status === "degraded" ? ui.yellow : ui.red)(status) + (reason ? ` (${reason})` : "");

/** Why a pending item waits, for the human output of an outbox item (empty when it does not). */
const held = (item: OutboxItem) => (item.hold_reason ? ` (held: ${item.hold_reason}${item.not_before ? ` until ${time(item.not_before)} UTC` : ""})` : "");

/** `relay capacity`: one row per line, new-contact budgets as used/limit. */
function capacityText(capacity: Capacity, ui: Style): string {
  const budget = (w: LineCapacity["new_contacts"]["hour"]) => (w.limit === null ? `${w.used} (no limit)` : `${w.used}/${w.limit}`);
  const now = Date.now();
  const rows = capacity.lines.map((l) => {
    const waiting = Object.entries(l.queued).filter(([, n]) => n > 0);
    const total = waiting.reduce((sum, [, n]) => sum + n, 0);
    return {
      handle: l.handle,
      health: health(ui, l.status),
      "new/hour": budget(l.new_contacts.hour),
      "new/day": budget(l.new_contacts.day),
      quiet: l.quiet_hours.active ? (l.quiet_hours.until ? `until ${time(l.quiet_hours.until)}` : "yes") : "no",
      waiting: total ? `${total} (${waiting.map(([reason, n]) => `${n} ${reason}`).join(", ")})` : "0",
      "next slot": l.next_slot_at === null ? "none (a budget is 0)" : l.next_slot_at <= now ? "now" : time(l.next_slot_at),
    };
  });
  const head = capacity.pool_id ? `Pool ${capacity.pool_id}: ${capacity.lines.length} line(s)\n` : "";
  return `${head}${table(rows, ["handle", "health", "new/hour", "new/day", "quiet", "waiting", "next slot"], ui)}\n${ui.dim("new/hour, new/day: conversations opened with new contacts / the line's budget, per sliding hour and day. Times are UTC.")}`;
}

const messageRow = (m: Message) => ({
  time: time(m.sent_at),
  from: m.is_from_me ? "me" : m.sender,
  text: m.text ?? m.attachments.map((a) => `[${a.filename}]`).join(" "),
});

/**
 * `relay messages --follow`: the latest messages (oldest first), then each new one as it
 * arrives through GET /v1/listen. The stream is opened before the backlog is read, so nothing
 * falls between them; repeats are dropped by message ID.
 */
async function follow(relay: Relay, values: Values, io: CliIo, ui: Style, json: boolean): Promise<number> {
  const from = need(values, "from");
  const to = values.to;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (io.signal?.aborted) return EXIT.ok;
  io.signal?.addEventListener("abort", onAbort, { once: true });
  const seen = recentIds();
  let chatId = to?.startsWith("cht_") ? to : undefined;
  const print = (m: Message) => {
    if (seen.has(m.id)) return;
    seen.add(m.id);
    if (json) return io.stdout(`${JSON.stringify(m)}\n`);
    const row = messageRow(m);
    io.stdout(`${ui.dim(row.time)}  ${m.is_from_me ? ui.cyan(row.from.padEnd(16)) : row.from.padEnd(16)}  ${row.text}\n`);
  };
  let backlog: Promise<void> | undefined;
  let failure: unknown;
  const loadBacklog = async () => {
    const page = await relay.messages.list({ from, to, limit: limitOf(values) ?? 20 }, { signal: stop.signal }).catch((err: unknown) => {
      // A contact that has not written yet: nothing to show until it does.
      if (err instanceof RelayError && err.code === "chat_not_found" && !to?.startsWith("cht_")) return { data: [] as Message[] };
      throw err;
    });
    chatId ??= page.data[0]?.chat_id;
    for (const m of page.data.reverse()) print(m);
    if (!json) io.stderr(`${ui.dim(`Following new messages on ${from}${to ? ` with ${to}` : ""} (Ctrl-C to stop)`)}\n`);
  };
  try {
    const events = relay.listen(
      { from, events: "message.received,message.sent" },
      {
        signal: stop.signal,
        onSession: () => {
          backlog ??= loadBacklog().catch((err: unknown) => {
            if (stop.signal.aborted) return; // Ctrl-C while it loaded
            failure = err;
            stop.abort();
          });
        },
        onReconnect: ({ attempt, delayMs }) => {
          if (!json && attempt === 1) io.stderr(`${ui.yellow("Connection lost")}; reconnecting (next try in ${Math.round(delayMs / 100) / 10} s)…\n`);
        },
      },
    );
    for await (const event of events) {
      await backlog;
      if (event.event !== "message.received" && event.event !== "message.sent") continue;
      const m = event.data;
      if (to) {
        // A chat without messages yet: its first one is the contact's.
        if (chatId ? m.chat_id !== chatId : m.sender !== to) continue;
        chatId = m.chat_id;
      }
      print(m);
    }
    await backlog;
  } finally {
    io.signal?.removeEventListener("abort", onAbort);
  }
  if (failure) throw failure;
  return EXIT.ok;
}

/** `relay sandbox status | activate [--wait]`: activate draws the sms: link as a QR code. */
async function sandbox(relay: Relay, sub: string | undefined, values: Values, io: CliIo, ui: Style, out: Out, json: boolean): Promise<number> {
  if (sub !== "status" && sub !== "activate") throw new UsageError("usage: relay sandbox status | activate [--wait]");
  const signal = io.signal;
  let state = sub === "activate" ? await relay.sandbox.activate({ signal }) : await relay.sandbox.get({ signal });
  if (sub === "activate" && state.status === "pending" && state.activation_code && !json) {
    const link = sandboxSmsLink(state.sandbox_line_handle, state.activation_code);
    io.stdout(`Scan with your phone's camera, or text ${ui.bold(state.activation_code)} to ${ui.bold(state.sandbox_line_handle)} from your phone:\n\n`);
    io.stdout(`${renderQr(encodeQr(link), { color: io.color === true })}\n\n${ui.dim(link)}\n`);
  }
  if (sub === "activate" && values.wait && state.status !== "active") {
    const deadline = Date.now() + 10 * 60_000;
    const progress = json ? null : spinner(io.stderr, io.interactive === true, "Waiting for the activation text…");
    try {
      while (state.status !== "active") {
        if (Date.now() > deadline) {
          io.stderr("Still waiting for the activation text after 10 minutes: run `relay sandbox activate --wait` again for a new code.\n");
          return EXIT.network;
        }
        await new Promise((r) => setTimeout(r, 2_000));
        if (signal?.aborted) return EXIT.ok;
        state = await relay.sandbox.get({ signal });
      }
    } finally {
      progress?.stop();
    }
  }
  out(state, () =>
    [
      `Sandbox: ${ui.status(state.status)}${state.contact_identifier ? `, paired with ${state.contact_identifier}` : ""}`,
      `Line ${state.sandbox_line_handle}; today ${state.usage.used}/${state.usage.limit} messages, resets ${time(state.usage.resets_at)} UTC`,
    ].join("\n"),
  );
  return EXIT.ok;
}

/**
 * `relay listen --forward-to URL`: each event, re-signed with this server and key's local secret
 * (kept in the config file), POSTed to URL. `--print-secret` shows the secret and exits.
 */
async function listen(relay: Relay, values: Values, io: CliIo, ui: Style, json: boolean, login: { dir: string; baseUrl: string; apiKey: string }): Promise<number> {
  const log = (value: unknown, human: string) => io.stdout(`${json ? JSON.stringify(value) : human}\n`);
  const rotate = values["rotate-secret"] === true;
  if (values["print-secret"]) {
    if (values["forward-to"]) throw new UsageError("--print-secret shows the secret and exits: leave out --forward-to");
    let saved: { secret: string; created: boolean };
    try {
      saved = await listenSecret(login.dir, login.baseUrl, login.apiKey, { rotate });
    } catch (err) {
      io.stderr(`${ui.red("Error:")} could not keep the signing secret in ${login.dir} (${(err as Error).message}). Set RELAY_CONFIG_DIR to a folder you can write.\n`);
      return EXIT.apiError;
    }
    log({ secret: saved.secret, created: saved.created, rotated: rotate }, saved.secret);
    return EXIT.ok;
  }
  const target = need(values, "forward-to");
  try {
    new URL(target);
  } catch {
    throw new UsageError(`--forward-to must be a URL such as http://localhost:4000/webhooks`);
  }
  const { secret } = await listenSecret(login.dir, login.baseUrl, login.apiKey, { rotate }).catch((err: Error) => {
    // A config folder it cannot write (read-only home): this run still works, with a secret of its own.
    io.stderr(ui.yellow(`Could not save the signing secret in ${login.dir} (${err.message}): this run uses a new one.\n`));
    return { secret: `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}` };
  });
  if (rotate) log({ type: "rotated", secret }, `${ui.yellow("New signing secret")} (the old one no longer signs): ${ui.bold(secret)}`);
  const forwarded = recentIds();
  for await (const event of relay.listen(
    { from: values.from, events: values.events },
    {
      signal: io.signal,
      onSession: (s) =>
        log(
          { type: "ready", session: s.session, lines: s.lines, events: s.events, secret, forward_to: target },
          `${ui.green("Ready.")} Listening on ${s.lines.join(", ")} (session ${s.session}).\nForwarding to ${target}, signed with ${ui.bold(secret)}\n(verify with verifyWebhook(rawBody, headers, "${secret}"))`,
        ),
      onReconnect: ({ attempt, delayMs, error }) =>
        log(
          { type: "reconnecting", attempt, delay_ms: delayMs, error: error instanceof Error ? error.message : null },
          ui.yellow(`Connection lost${error instanceof Error ? ` (${error.message})` : ""}; reconnecting in ${Math.round(delayMs / 100) / 10} s (attempt ${attempt})…`),
        ),
    },
  )) {
    if (forwarded.has(event.delivery_id)) continue; // repeated after a reconnect
    const rawBody = JSON.stringify(event);
    const headers = await signWebhook({ secret, rawBody, timestamp: Date.now(), deliveryId: event.delivery_id });
    let status: number | string;
    try {
      const res = await fetch(target, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: rawBody, signal: io.signal });
      status = res.status;
      await res.body?.cancel();
      if (res.ok) forwarded.add(event.delivery_id);
    } catch (err) {
      if (io.signal?.aborted) break;
      status = `error: ${(err as Error).message}`;
    }
    const shown = typeof status === "number" && status >= 200 && status < 300 ? ui.green(String(status)) : ui.red(String(status));
    log({ type: "forwarded", event: event.event, delivery_id: event.delivery_id, status }, `${ui.dim(time(Date.now()))}  ${event.event}  ${event.delivery_id}  -> ${shown}`);
  }
  return EXIT.ok;
}

type Out = (value: unknown, human: () => string) => void;

async function webhooks(relay: Relay, sub: string | undefined, arg: string | undefined, values: Values, out: Out, ui: Style, signal?: AbortSignal): Promise<number> {
  switch (sub) {
    case "list": {
      const page = await relay.webhooks.list({ from: values.from, limit: limitOf(values) }, { signal });
      out(page, () => table(page.data.map((w) => ({ ...w, events: w.events.join(","), active: w.is_active ? "yes" : "no" })), ["id", "url", "events", "active"], ui));
      return EXIT.ok;
    }
    case "create": {
      const events = need(values, "events").split(",").map((e) => e.trim()).filter(Boolean);
      const hook = await relay.webhooks.create({ from: need(values, "from"), url: need(values, "url"), events }, { signal });
      out(hook, () => `Created ${hook.id}. Signing secret (shown once): ${hook.secret}`);
      return EXIT.ok;
    }
    case "delete": {
      if (!arg) throw new UsageError("usage: relay webhooks delete WEBHOOK_ID");
      const deleted = await relay.webhooks.delete(arg, { signal });
      out(deleted, () => `Deleted ${deleted.id}.`);
      return EXIT.ok;
    }
    case "deliveries": {
      if (!arg) throw new UsageError("usage: relay webhooks deliveries WEBHOOK_ID");
      const page = await relay.webhooks.deliveries({ webhook_id: arg, limit: limitOf(values) }, { signal });
      out(page, () => table(page.data.map((d) => ({ ...d, created: time(d.created_at), last: d.last_status_code ?? d.last_error ?? "" })), ["id", "event", "status", "attempts", "last", "created"], ui));
      return EXIT.ok;
    }
    case "resend": {
      let body: { id: string } | { webhook_id: string; since: number };
      if (values.id) body = { id: values.id };
      else {
        const raw = need(values, "since");
        const since = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
        if (Number.isNaN(since)) throw new UsageError("--since must be Unix ms or an ISO date");
        body = { webhook_id: need(values, "webhook"), since };
      }
      const result = await relay.webhooks.resend(body, { signal });
      out(result, () => `Resent ${result.resent} delivery(ies).`);
      return EXIT.ok;
    }
    default:
      throw new UsageError("usage: relay webhooks list | create | delete | deliveries | resend");
  }
}
