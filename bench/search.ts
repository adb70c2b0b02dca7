// The `search` part of npm run bench (PostgreSQL only): full-text search over a million
// messages. One app instance (`npm start`, an empty DATA_DIR) on a schema of its own; the
// account, its two lines and a key come from the operator CLI, then BENCH_SEARCH_MESSAGES
// messages (default 1,000,000) are written with one INSERT ... SELECT generate_series: 70% on
// the first line, 20% on the second, 10% on another account's line, in 2,600 chats, each text a
// few of 240 everyday words drawn with a skew (so "the" is in ~18% of the messages and
// "dinner" in ~3%) plus, in three messages of five, one of 300,000 made-up words (the long
// tail a real index holds), and "zanzibar" in one message of 50,000. The GIN index is built
// after the rows, as a restore would.
// Measured, from a separate process (autocannon, each request a distinct URL so that the read
// cache never answers): GET /v1/messages?from=&query= on the first line for a very common, a
// common, a rare word and two words, one chat's messages, and GraphQL searchMessages over every
// line of the account. Each query with one connection (the latency of one search: p50, p99)
// and with BENCH_SEARCH_CONNECTIONS (default 8: requests/s). Loopback only; bounded in time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { adminCliAsync, freePort, spawnStart, stopWithSigterm, waitUntilUp } from "../e2e/harness";
import { type LoadResult, measureWithCpu, serverEnv } from "./load";

export interface SearchOptions {
  /** PostgreSQL server URL; a schema of its own is created and dropped. */
  pgUrl: string;
  messages: number;
  seconds: number;
  connections: number;
}

interface Measured extends LoadResult {
  cpuMs: number;
}

interface SearchRow {
  name: string;
  /** Messages in the searched scope that match. */
  matches: number;
  single: Measured;
  loaded: Measured;
}

export interface SearchResults {
  messages: number;
  seedSeconds: number;
  indexSeconds: number;
  tableMB: number;
  indexMB: number;
  rows: SearchRow[];
}

const LINE_A = "+15550009200";
const LINE_B = "+15550009201";
const LINE_OTHER = "+15550009202";
const CHATS = { a: 2000, b: 500, other: 100 };

// Everyday words, most common first: a word's share falls with its place (drawn as
// floor(240 * random()^2.2)), roughly as word frequencies do in short messages.
const WORDS = (
  "the i you to a and it is that me my for on in be so we have just do what are at this know can was but get not lol ok yeah going " +
  "like will with no your if up good now go time love see out all one tomorrow tonight today dinner lunch home work call later think " +
  "want need come back here there when how where thanks thank sorry really still right got did about too from they he she her him them " +
  "been had would could should meeting party weekend friday saturday sunday monday morning night coffee movie game school class car pick " +
  "train flight airport hotel birthday happy great nice sure maybe please hey hi hello bye soon late early minutes hour week month year " +
  "money pay send text phone picture photo video music song beach park store grocery milk bread pizza beer wine gym run running walk dog " +
  "cat kids mom dad brother sister family friend doctor appointment office project deadline email report budget contract invoice package " +
  "delivery address order ticket concert tuesday wednesday thursday breakfast kitchen garden rain snow sun weather traffic bus station " +
  "bank card cash rent lease landlord plumber keys door window laptop charger battery wifi password update meeting notes slides review " +
  "draft final version client team manager interview salary vacation trip beach passport visa luggage"
).split(" ");

/** The seed: chats, then the messages, then the GIN index and the statistics. */
async function seed(client: pg.Client, o: SearchOptions, ids: { account: string; other: string; a: string; b: string; c: string }) {
  await client.query(
    `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, "hasReceivedInbound")
     SELECT 'cht_bench' || lpad(i::text, 6, '0'),
            CASE WHEN i < $1::int + $2::int THEN $4 ELSE $5 END,
            CASE WHEN i < $1::int THEN $6 WHEN i < $1::int + $2::int THEN $7 ELSE $8 END,
            '+1555300' || lpad(i::text, 4, '0'), 'imessage', true
     FROM generate_series(0, $1::int + $2::int + $3::int - 1) i`,
    [CHATS.a, CHATS.b, CHATS.other, ids.account, ids.other, ids.a, ids.b, ids.c],
  );
  const started = performance.now();
  await client.query(`DROP INDEX "Message_textSearch_idx"`);
  // 100,000 distinct sentences of 3 to 13 words, then each message one of them (picked by a
  // multiplicative hash of its number), three in five with a made-up word of the long tail.
  await client.query(
    `CREATE TEMP TABLE sentences AS
     SELECT s.n AS id,
            (SELECT string_agg(v.w[1 + least(floor(power(random(), 2.2) * $2::int)::int, $2::int - 1)], ' ')
             FROM generate_series(1, 3 + s.n % 11) k, (SELECT $1::text[] AS w) v) AS text
     FROM generate_series(0, 99999) s(n)`,
    [WORDS, WORDS.length],
  );
  await client.query(`CREATE UNIQUE INDEX ON sentences (id)`);
  await client.query(
    `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "sentAt", "syncedAt")
     SELECT 'msg_bench' || lpad(g::text, 22, '0'),
            CASE WHEN g % 10 = 0 THEN $2 ELSE $1 END,
            CASE WHEN g % 10 = 0 THEN $5 WHEN g % 10 < 3 THEN $4 ELSE $3 END,
            'cht_bench' || lpad((CASE WHEN g % 10 = 0 THEN $7::int + $8::int + g % $9::int WHEN g % 10 < 3 THEN $7::int + g % $8::int ELSE g % $7::int END)::text, 6, '0'),
            'bench-' || g,
            '+1555300' || lpad((g % 1000)::text, 4, '0'),
            s.text
              || CASE WHEN g % 5 < 3 THEN ' ' || translate(substr(md5(((g::bigint * 104729) % 300000)::text), 1, 4 + g % 5), '0123456789', 'aeiouybkmz') ELSE '' END
              || CASE WHEN g % 50000 = 123 THEN ' zanzibar' ELSE '' END,
            g % 2 = 0,
            now() - ($6::int - g) * interval '2 seconds',
            now() - ($6::int - g) * interval '2 seconds'
     FROM generate_series(1, $6::int) g
     JOIN sentences s ON s.id = (g::bigint * 7919) % 100000`,
    [ids.account, ids.other, ids.a, ids.b, ids.c, o.messages, CHATS.a, CHATS.b, CHATS.other],
  );
  const seeded = performance.now();
  await client.query(`SET maintenance_work_mem = '256MB'`);
  await client.query(`CREATE INDEX "Message_textSearch_idx" ON "Message" USING GIN ("textSearch")`);
  await client.query(`VACUUM ANALYZE "Message"`);
  await client.query(`ANALYZE "Chat"`);
  return { seedSeconds: (seeded - started) / 1000, indexSeconds: (performance.now() - seeded) / 1000 };
}

export async function measureSearch(o: SearchOptions): Promise<SearchResults> {
  const schema = `bench_search_${Date.now()}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-bench-search-"));
  const env = serverEnv(port, {
    DATA_DIR: dataDir,
    DATABASE_URL: o.pgUrl,
    DATABASE_SCHEMA: schema,
    CREDENTIALS_KEY: "bench-search-credentials-key-0123456789",
  });
  const child = spawnStart(port, env);
  const client = new pg.Client({ connectionString: o.pgUrl, options: `-c search_path="${schema}"` });
  try {
    await waitUntilUp(`${base}/readyz`, child, "the search bench's server did not become ready", 90_000);
    await client.connect();
    await adminCliAsync(env, "account", "create", "--email", "search@example.com");
    await adminCliAsync(env, "account", "create", "--email", "search-other@example.com");
    for (const [account, handle] of [["search@example.com", LINE_A], ["search@example.com", LINE_B], ["search-other@example.com", LINE_OTHER]]) {
      await adminCliAsync(env, "line", "create", "--account", account!, "--handle", handle!);
    }
    const key = await adminCliAsync(env, "key", "create", "--account", "search@example.com", "--name", "bench", "--rate-limit", "100000000");
    const lines = new Map(
      (await client.query<{ handle: string; id: string; accountId: string }>(`SELECT handle, id, "accountId" FROM "Line" WHERE handle = ANY($1)`, [[LINE_A, LINE_B, LINE_OTHER]])).rows.map((r) => [
        r.handle,
        r,
      ]),
    );
    const ids = {
      account: lines.get(LINE_A)!.accountId,
      other: lines.get(LINE_OTHER)!.accountId,
      a: lines.get(LINE_A)!.id,
      b: lines.get(LINE_B)!.id,
      c: lines.get(LINE_OTHER)!.id,
    };
    console.error(`search: seeding ${o.messages.toLocaleString("en")} messages...`);
    const times = await seed(client, o, ids);
    const size = async (relation: string) =>
      Number((await client.query(`SELECT pg_total_relation_size($1) / 1048576.0 AS mb`, [relation])).rows[0].mb);
    const tableMB = Number((await client.query(`SELECT pg_relation_size('"Message"') / 1048576.0 AS mb`)).rows[0].mb);
    const indexMB = await size(`"Message_textSearch_idx"`);
    const count = async (query: string, where: string, params: unknown[]) =>
      Number(
        (
          await client.query(
            `SELECT count(*)::int AS n FROM "Message" WHERE "textSearch" @@ websearch_to_tsquery('simple', $1) AND ${where}`,
            [query, ...params],
          )
        ).rows[0].n,
      );

    const auth = { authorization: `Bearer ${key}` };
    const chat = "cht_bench000007";
    const rest = (query: string, extra = "") =>
      `${base}/v1/messages?from=${encodeURIComponent(LINE_A)}&query=${encodeURIComponent(query)}${extra}&nonce=[<id>]&limit=50`; // autocannon's argument parser takes a word ending in ] for a sub-argument
    const graphql = (query: string) => ({
      url: `${base}/api/graphql`,
      method: "POST" as const,
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        query: `query ($q: String!) { searchMessages(query: $q, limit: 50) { messages { id text sentAt chatId } hasMore nextCursor } }`,
        variables: { q: query },
      }),
    });
    const onA = `"accountId" = $2 AND "lineId" = $3`;
    const onAccount = `"accountId" = $2`;
    const lineCount = async () =>
      Number((await client.query(`SELECT count(*)::int AS n FROM "Message" WHERE "accountId" = $1 AND "lineId" = $2`, [ids.account, ids.a])).rows[0].n);
    const targets: { name: string; request: { url: string; method?: "GET" | "POST"; headers: Record<string, string>; body?: string }; matches: () => Promise<number> }[] = [
      // The same page without a query: what reading and answering 50 messages costs anyway.
      { name: "line: no query (the plain list)", request: { url: `${base}/v1/messages?from=${encodeURIComponent(LINE_A)}&nonce=[<id>]&limit=50`, headers: auth }, matches: lineCount },
      { name: 'line: "the" (very common)', request: { url: rest("the"), headers: auth }, matches: () => count("the", onA, [ids.account, ids.a]) },
      { name: 'line: "dinner" (common)', request: { url: rest("dinner"), headers: auth }, matches: () => count("dinner", onA, [ids.account, ids.a]) },
      { name: 'line: "zanzibar" (rare)', request: { url: rest("zanzibar"), headers: auth }, matches: () => count("zanzibar", onA, [ids.account, ids.a]) },
      { name: 'line: "dinner tomorrow" (two words)', request: { url: rest("dinner tomorrow"), headers: auth }, matches: () => count("dinner tomorrow", onA, [ids.account, ids.a]) },
      {
        name: 'one chat: "dinner"',
        request: { url: rest("dinner", `&to=${chat}`), headers: auth },
        matches: () => count("dinner", `${onA} AND "chatId" = $4`, [ids.account, ids.a, chat]),
      },
      { name: 'account (GraphQL): "dinner"', request: graphql("dinner"), matches: () => count("dinner", onAccount, [ids.account]) },
      { name: 'account (GraphQL): "zanzibar"', request: graphql("zanzibar"), matches: () => count("zanzibar", onAccount, [ids.account]) },
      {
        name: 'account (GraphQL): "dinner tomorrow"',
        request: graphql("dinner tomorrow"),
        matches: () => count("dinner tomorrow", onAccount, [ids.account]),
      },
    ];
    // Each answer checked once before the load: a page of matches (the rare word's all of them).
    for (const t of targets) {
      const res = await fetch(t.request.url.replace("[<id>]", "check"), {
        method: t.request.method ?? "GET",
        headers: t.request.headers,
        body: t.request.body?.replace("[<id>]", "check"),
      });
      const body = (await res.json()) as { data?: unknown[] | { searchMessages?: { messages: unknown[] } } };
      const found = Array.isArray(body.data) ? body.data.length : (body.data?.searchMessages?.messages.length ?? -1);
      const matches = await t.matches();
      if (res.status !== 200 || found !== Math.min(50, matches)) {
        throw new Error(`search bench: ${t.name} answered ${res.status} with ${found} messages (expected ${Math.min(50, matches)}): ${JSON.stringify(body).slice(0, 300)}`);
      }
    }
    const rows: SearchRow[] = [];
    for (const t of targets) {
      const options = { ...t.request, unique: true };
      await measureWithCpu(child.pid!, { ...options, connections: 2, seconds: 2 }); // warm-up
      const single = await measureWithCpu(child.pid!, { ...options, connections: 1, seconds: o.seconds });
      const loaded = await measureWithCpu(child.pid!, { ...options, connections: o.connections, seconds: o.seconds });
      rows.push({ name: t.name, matches: await t.matches(), single, loaded });
    }
    return { messages: o.messages, ...times, tableMB, indexMB, rows };
  } finally {
    await client.end().catch(() => undefined);
    await stopWithSigterm(child, "the search bench's server", 40_000).catch((err: unknown) => console.error(String(err)));
    rmSync(dataDir, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: o.pgUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

export function searchReport(r: SearchResults, o: SearchOptions): string[] {
  const out = [
    `\nSearch: GET /v1/messages?query= (line, one chat) and GraphQL searchMessages (every line of the account) over ${r.messages.toLocaleString("en")} messages on PostgreSQL, pages of 50, each request a distinct URL (no read cache), ${o.seconds}s per measurement (target: p50 < 100 ms)`,
    `seeded in ${r.seedSeconds.toFixed(0)} s, GIN index built in ${r.indexSeconds.toFixed(0)} s; messages table ${r.tableMB.toFixed(0)} MB, GIN index ${r.indexMB.toFixed(0)} MB`,
    `query                                     matches   1 connection: req/s  p50 ms  p99 ms   ${o.connections} connections: req/s  p50 ms  p99 ms  errors  server CPU ms/req`,
  ];
  for (const row of r.rows) {
    out.push(
      `${row.name.padEnd(40)} ${String(row.matches).padStart(8)} ${row.single.rps.toFixed(0).padStart(20)} ${row.single.p50.toFixed(1).padStart(7)} ${row.single.p99.toFixed(1).padStart(7)} ${row.loaded.rps.toFixed(0).padStart(23)} ${row.loaded.p50.toFixed(1).padStart(7)} ${row.loaded.p99.toFixed(1).padStart(7)} ${String(row.single.errors + row.loaded.errors).padStart(7)} ${row.loaded.cpuMs.toFixed(2).padStart(18)}`,
    );
  }
  const worst = Math.max(...r.rows.map((row) => row.single.p50));
  out.push(`search: worst p50 of one search ${worst.toFixed(1)} ms (target < 100 ms) -> ${worst < 100 ? "met" : "NOT met"}`);
  return out;
}
