import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "@/server/transports/openapi/openapi";
import { OPERATIONS } from "@/server/services/operations";
import { ERROR_CODES, type ErrorCode } from "@/server/kernel/errors";
import { GRAPHQL_PROTOCOL_CODES } from "@/server/transports/graphql/mask-error";
import { newId } from "@/server/kernel/ids";
import { SimulatorMessageBody, SimulatorReactionBody, SimulatorTypingBody } from "@/server/services/schemas/simulator-requests";
import { dispatch, gql, inbound, makeAccount, makeKey, phone, post, type Fixture } from "./helpers";

// Property-based fuzzing of the HTTP edge: malformed JSON, wrong types, huge and control-
// character strings, unpaired surrogates, deep nesting, bad cursors and IDs, odd methods,
// content types and headers, thrown at every /v1 operation (server/services/operations.ts), the
// simulator and the GraphQL endpoint. Whatever comes in, the answer is below 500, in the
// documented error shape with a code of the table and a request_id, and within a second.
//
// Reproduce a failure with the seed it prints: FUZZ_SEED=<seed> npx vitest run tests/fuzz.test.ts
// (FUZZ_RUNS scales the number of runs).

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const MAX_MS = 1000;

type JsonSchema = { properties?: Record<string, unknown> };
type DocOperation = { parameters?: { name: string; in: string }[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } };

interface Target {
  name: string;
  method: string;
  path: string;
  query: string[];
  body: string[] | null;
  raw: boolean;
}

/** Every /v1 operation with the names of its query parameters and body fields, and the simulator's writes. */
function targets(): Target[] {
  const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, DocOperation>> };
  const list: Target[] = Object.entries(OPERATIONS).map(([name, op]) => {
    const documented = doc.paths[op.path]?.[op.method.toLowerCase()] ?? {};
    const schema = documented.requestBody?.content?.["application/json"]?.schema;
    return {
      name,
      method: op.method,
      path: op.path,
      query: (documented.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
      body: "body" in op && op.body ? Object.keys(schema?.properties ?? {}) : null,
      raw: Boolean(op.upload),
    };
  });
  for (const [path, schema] of [
    ["/api/simulator/messages", SimulatorMessageBody],
    ["/api/simulator/reactions", SimulatorReactionBody],
    ["/api/simulator/typing", SimulatorTypingBody],
  ] as const) {
    list.push({ name: `simulator ${path}`, method: "POST", path, query: [], body: Object.keys(schema.shape), raw: false });
  }
  list.push({ name: "simulator inbox", method: "GET", path: "/api/simulator/messages", query: ["line", "contact", "limit", "cursor"], body: null, raw: false });
  return list;
}

let f: Fixture;
let key: string;
/** Values that pass validation, so the fuzzer also reaches the services behind it. */
let good: string[] = [];

beforeAll(async () => {
  f = await makeAccount();
  key = await makeKey(f.accountId, { rateLimitPerHour: 1_000_000 });
  const contact = phone();
  const message = await inbound(f, contact, "hello");
  const webhook = await post("/v1/webhooks", key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
  // Load every route module and build the GraphQL schema first: cold starts are not answers.
  for (const t of targets()) await dispatch(new Request(`http://localhost:3000${t.path}`, { method: "OPTIONS" }));
  await gql(key, "{ sandbox { status } }");
  good = [f.line.handle, f.line.id, contact, message.id, message.chat_id ?? newId("chat"), webhook.body.id, newId("message"), newId("outbox"), "love", "off", "message.received", "https://example.com/x"];
});

// --- arbitraries -------------------------------------------------------------------------

const PREFIXES = ["msg_", "cht_", "ln_", "obx_", "wh_", "file_", "dlv_", "rxn_", "req_", "sk_live_", ""];

const controlString = fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 20 });
const loneSurrogate = fc.constantFrom("\ud800", "\udfff", "a\ud83d", "\ude00b", "\udbff\udbff");
const huge = fc.constantFrom(
  "x".repeat(100_000),
  "\u0000".repeat(10_000),
  "[".repeat(20_000),
  "+1".repeat(50_000),
  `${" ".repeat(100_000)}!`,
  "%".repeat(20_000),
  "a.".repeat(50_000),
  "😀".repeat(30_000),
);
const badId = fc.tuple(fc.constantFrom(...PREFIXES), fc.oneof(fc.string({ maxLength: 40 }), fc.constant("0".repeat(26)), fc.stringMatching(/^[0-9a-z]{26}$/))).map(([p, s]) => p + s);
const badCursor = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => Buffer.from(JSON.stringify(v) ?? "").toString("base64url")),
  fc.base64String({ maxLength: 40 }),
);
const numeric = fc.constantFrom("0", "-1", "1e309", "NaN", "Infinity", "99999999999999999999", "1.5", "0x10", " 5 ", "", "null", "true");

const hostileString = fc.oneof(
  { arbitrary: fc.string({ maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 30 }), weight: 2 },
  { arbitrary: controlString, weight: 1 },
  { arbitrary: loneSurrogate, weight: 1 },
  { arbitrary: huge, weight: 1 },
  { arbitrary: badId, weight: 2 },
  { arbitrary: badCursor, weight: 1 },
  { arbitrary: numeric, weight: 1 },
  { arbitrary: fc.constant(null).chain(() => fc.constantFrom(...good)), weight: 3 },
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 6 },
  { arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)), weight: 2 },
  { arbitrary: fc.array(hostileString, { maxLength: 3 }), weight: 1 },
  { arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), hostileString, { maxKeys: 3 }), weight: 1 },
);

/** An object with some of the given fields (and maybe others) set to hostile values. */
const fieldsOf = (names: string[]) =>
  fc
    .tuple(
      fc.subarray(names).chain((picked) => fc.tuple(...picked.map((n) => hostileValue.map((v) => [n, v] as const)))),
      fc.dictionary(fc.string({ maxLength: 8 }), hostileValue, { maxKeys: 2 }),
    )
    .map(([pairs, extra]) => ({ ...extra, ...Object.fromEntries(pairs) }));

const deepJson = fc.tuple(fc.integer({ min: 60, max: 12_000 }), fc.boolean()).map(([n, arrays]) =>
  arrays ? `{"text":${"[".repeat(n)}${"]".repeat(n)}}` : `${'{"a":'.repeat(n)}1${"}".repeat(n)}`,
);

/** A JSON request body: mostly an object of the operation's fields, else malformed or odd JSON. */
const bodyText = (names: string[]) =>
  fc.oneof(
    { arbitrary: fieldsOf(names).map((o) => JSON.stringify(o)), weight: 8 },
    { arbitrary: fieldsOf(names).chain((o) => fc.nat().map((n) => JSON.stringify(o).slice(0, n % (JSON.stringify(o).length + 1)))), weight: 1 },
    { arbitrary: fc.string({ maxLength: 50 }), weight: 1 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? "null"), weight: 1 },
    { arbitrary: deepJson, weight: 1 },
    { arbitrary: fc.constantFrom("", " ", "\u0000", "{\"a\":1}garbage", "\ufeff{}", "{\"from\":\"\\ud800\"}", "{\"text\":\"\\u0000\"}"), weight: 1 },
  );

const queryString = (names: string[]) =>
  fieldsOf(names).map((o) => {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(o)) search.append(k, typeof v === "string" ? v : JSON.stringify(v) ?? "");
    return search.toString();
  });

const authorization = fc.oneof(
  { arbitrary: fc.constant("valid"), weight: 12 },
  { arbitrary: fc.constantFrom(undefined, "Bearer", "Bearer sk_live_", "Basic abc", `Bearer sk_live_${"x".repeat(32)}`), weight: 1 },
  { arbitrary: fc.string({ maxLength: 30 }).map((s) => `Bearer ${s}`), weight: 1 },
);
const contentType = fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", undefined, "application/x-www-form-urlencoded", "image/png", "a/b/c", "");
const headerValue = fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x20-\x7e]/g, ""));

// --- requests and what every answer must look like -------------------------------------------

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

async function send(req: Sent): Promise<{ status: number; headers: Headers; text: string; ms: number }> {
  const started = performance.now();
  const response = await dispatch(new Request(new URL(req.url, "http://localhost:3000"), { method: req.method, headers: req.headers, body: req.body as BodyInit | undefined }));
  // A valid GET /v1/listen opens an event stream: its headers are the answer.
  const text = response.headers.get("content-type")?.includes("text/event-stream") ? (await response.body?.cancel(), "") : await response.text();
  return { status: response.status, headers: response.headers, text, ms: performance.now() - started };
}

const describeRequest = (req: Sent) => `${req.method} ${req.url.slice(0, 200)} ${JSON.stringify(req.headers).slice(0, 200)} body=${String(req.body ?? "").slice(0, 200)}`;

function checkRest(req: Sent, res: Awaited<ReturnType<typeof send>>): void {
  const where = `${describeRequest(req)} -> ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  expect(res.ms, where).toBeLessThan(MAX_MS);
  expect(res.headers.get("request-id"), where).toMatch(/^req_/);
  if (res.status >= 400) {
    const body = JSON.parse(res.text) as { error?: { type?: unknown; code?: unknown; message?: unknown }; request_id?: unknown };
    const code = body.error?.code as ErrorCode;
    expect(Object.keys(ERROR_CODES), where).toContain(code);
    expect(body.error, where).toMatchObject({ type: ERROR_CODES[code].type, message: expect.any(String) });
    expect(res.status, where).toBe(ERROR_CODES[code].status);
    expect(body.request_id, where).toBe(res.headers.get("request-id"));
  } else if (res.text && !req.url.startsWith("/v1/openapi.json")) {
    // (The OpenAPI document is not an API object: its request ID is in the header only.)
    expect((JSON.parse(res.text) as { request_id?: unknown }).request_id, where).toBe(res.headers.get("request-id"));
  }
}

function restRequest(t: Target) {
  return fc
    .record({
      auth: authorization,
      query: queryString(t.query),
      body: t.raw ? fc.oneof(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 2000 }), fc.constant("")) : bodyText(t.body ?? []),
      contentType,
      method: fc.oneof({ arbitrary: fc.constant(t.method), weight: 10 }, { arbitrary: fc.constantFrom("GET", "POST", "DELETE", "PUT", "PATCH"), weight: 1 }),
      idempotencyKey: fc.option(headerValue, { freq: 4 }),
      filename: fc.option(headerValue, { freq: 4 }),
    })
    .map((r): Sent => {
      const headers: Record<string, string> = {};
      if (r.auth === "valid") headers.authorization = `Bearer ${key}`;
      else if (r.auth !== undefined) headers.authorization = r.auth;
      if (r.contentType !== undefined) headers["content-type"] = r.contentType;
      if (r.idempotencyKey !== null) headers["idempotency-key"] = r.idempotencyKey;
      if (r.filename !== null) headers["x-filename"] = r.filename;
      const withBody = r.method !== "GET" && (t.body !== null || t.raw || r.method !== t.method);
      return { method: r.method, url: `${t.path}${r.query ? `?${r.query}` : ""}`, headers, body: withBody ? r.body : undefined };
    });
}

describe("fuzzing every route: never a 5xx, always a documented error with a request_id, never slower than a second", () => {
  it("every /v1 operation and the simulator", async () => {
    for (const t of targets()) {
      await fc.assert(
        fc.asyncProperty(restRequest(t), async (req) => checkRest(req, await send(req))),
        { seed: SEED, numRuns: 60 * RUNS, endOnFailure: true, reporter: reportWithSeed(t.name) },
      );
    }
  }, 120_000);

  it("unknown paths and methods under /v1", async () => {
    const path = fc.oneof(
      fc.constantFrom("/v1", "/v1/", "/v1/openapi.json", "/v1/messages/extra", "/v1//messages", "/v1/%00", "/v1/%F0%9F%98%80"),
      // (Not "." or "..": the URL parser resolves those, leaving /v1.)
      fc
        .array(fc.stringMatching(/^[A-Za-z0-9._~%-]{1,12}$/).filter((s) => s !== "." && s !== ".."), { minLength: 1, maxLength: 4 })
        .map((segments) => `/v1/${segments.join("/")}`),
    );
    const req = fc.record({ path, method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"), auth: authorization }).map(
      (r): Sent => ({ method: r.method, url: r.path, headers: r.auth === "valid" ? { authorization: `Bearer ${key}` } : {} }),
    );
    await fc.assert(
      fc.asyncProperty(req, async (r) => {
        const res = await send(r);
        checkRest(r, res);
        expect(res.headers.get("content-type"), describeRequest(r)).toContain("application/json");
      }),
      { seed: SEED, numRuns: 100 * RUNS, endOnFailure: true, reporter: reportWithSeed("unknown paths") },
    );
  }, 60_000);

  it("the GraphQL endpoint", async () => {
    await fc.assert(
      fc.asyncProperty(graphqlRequest, async (req) => checkGraphQL(req, await send(req))),
      { seed: SEED, numRuns: 600 * RUNS, endOnFailure: true, reporter: reportWithSeed("graphql") },
    );
  }, 120_000);
});

// --- GraphQL -----------------------------------------------------------------------------------

const INPUT_FIELDS = ["from", "to", "text", "attachments", "replyTo", "messageId", "type", "state", "audioMessage", "url", "events", "id", "webhookId", "since", "contentBase64", "mimeType", "filename"];

const OPERATIONS_GQL: [string, string[]][] = [
  ["query($from: String!, $to: String, $first: Int, $after: String) { messages(from: $from, to: $to, first: $first, after: $after) { edges { node { id text sender attachments { url } } } pageInfo { endCursor } } }", ["from", "to", "first", "after"]],
  ["query($from: String!, $first: Int, $after: String, $last: Int, $before: String) { chats(from: $from, first: $first, after: $after, last: $last, before: $before) { edges { node { id identifier } } } }", ["from", "first", "after", "last", "before"]],
  ["query($id: String!) { message(id: $id) { id text reactions { edges { node { type } } } } }", ["id"]],
  ["query($from: String!, $to: String!) { chat(from: $from, to: $to) { id } typing(from: $from, to: $to) { edges { node { id } } } receipts(from: $from, to: $to) { edges { node { id } } } }", ["from", "to"]],
  ["query($messageId: String!) { reactions(messageId: $messageId) { edges { node { id type } } } }", ["messageId"]],
  ["query($id: String!) { outboxItem(id: $id) { id status } webhook(id: $id) { id } webhookDelivery(id: $id) { id } file(id: $id) { id url } }", ["id"]],
  ["query($from: String, $status: OutboxStatus) { outbox(from: $from, status: $status) { edges { node { id } } } webhooks(from: $from) { edges { node { id } } } lines { edges { node { id } } } sandbox { status } }", ["from", "status"]],
  ...["sendMessage", "sendReaction", "sendTyping", "sendReceipt", "sendAudioMessage"].map((m): [string, string[]] => [`mutation($input: ${m[0]!.toUpperCase()}${m.slice(1)}Input!) { ${m}(input: $input) { id status } }`, ["input"]]),
  ["mutation($input: UploadFileInput!) { uploadFile(input: $input) { id size } }", ["input"]],
  ["mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret webhook { id } } }", ["input"]],
  ...["deleteWebhook", "enableWebhook", "disableWebhook", "rotateWebhookSecret"].map((m): [string, string[]] => [`mutation($input: WebhookIdInput!) { ${m}(input: $input) { __typename } }`, ["input"]]),
  ["mutation($input: ResendWebhookDeliveryInput!) { resendWebhookDelivery(input: $input) { resent } }", ["input"]],
];

const variablesFor = (names: string[]) =>
  fc.oneof(
    { arbitrary: fieldsOf(names).chain((v) => (names.includes("input") ? fieldsOf(INPUT_FIELDS).map((input) => ({ ...v, input })) : fc.constant(v))), weight: 8 },
    { arbitrary: hostileValue, weight: 1 },
  );

const document = fc.oneof(
  { arbitrary: fc.constantFrom(...OPERATIONS_GQL).chain(([q, names]) => variablesFor(names).map((variables) => ({ query: q, variables }) as Record<string, unknown>)), weight: 8 },
  // A valid operation with a few characters changed.
  {
    arbitrary: fc.tuple(fc.constantFrom(...OPERATIONS_GQL), fc.nat(), fc.string({ maxLength: 5 })).map(([[q], at, s]) => ({ query: q.slice(0, at % q.length) + s + q.slice(at % q.length) })),
    weight: 2,
  },
  { arbitrary: fc.string({ maxLength: 60 }).map((query) => ({ query })), weight: 1 },
  { arbitrary: fc.integer({ min: 60, max: 12_000 }).map((n) => ({ query: `{${"a{".repeat(n)}${"}".repeat(n + 1)}` })), weight: 1 },
  { arbitrary: fc.integer({ min: 1, max: 30_000 }).map((n) => ({ query: `{ sandbox { ${"status ".repeat(n)}} }` })), weight: 1 },
  { arbitrary: fc.record({ query: hostileValue, variables: hostileValue, operationName: hostileValue, extensions: hostileValue }, { requiredKeys: [] }), weight: 1 },
);

const graphqlRequest = fc
  .record({
    auth: authorization,
    params: document,
    transport: fc.constantFrom("post", "post", "post", "post", "get", "raw", "wrong-type", "deep", "put"),
    raw: fc.string({ maxLength: 60 }),
    deep: deepJson,
  })
  .map((r): Sent => {
    const headers: Record<string, string> = r.auth === "valid" ? { authorization: `Bearer ${key}` } : r.auth !== undefined ? { authorization: r.auth } : {};
    const json = JSON.stringify(r.params);
    switch (r.transport) {
      case "get": {
        const search = new URLSearchParams();
        for (const [k, v] of Object.entries(r.params)) search.set(k, typeof v === "string" ? v : JSON.stringify(v) ?? "");
        return { method: "GET", url: `/api/graphql?${search}`, headers };
      }
      case "raw":
        return { method: "POST", url: "/api/graphql", headers: { ...headers, "content-type": "application/json" }, body: r.raw };
      case "wrong-type":
        return { method: "POST", url: "/api/graphql", headers: { ...headers, "content-type": "text/plain" }, body: json };
      case "deep":
        return { method: "POST", url: "/api/graphql", headers: { ...headers, "content-type": "application/json" }, body: `{"query":"{ sandbox { status } }","variables":${r.deep}}` };
      case "put":
        return { method: "PUT", url: "/api/graphql", headers: { ...headers, "content-type": "application/json" }, body: json };
      default:
        return { method: "POST", url: "/api/graphql", headers: { ...headers, "content-type": "application/json" }, body: json };
    }
  });

const GRAPHQL_CODES = new Set<string>([...Object.keys(ERROR_CODES), ...GRAPHQL_PROTOCOL_CODES]);

function checkGraphQL(req: Sent, res: Awaited<ReturnType<typeof send>>): void {
  const where = `${describeRequest(req)} -> ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  expect(res.ms, where).toBeLessThan(MAX_MS);
  const requestId = res.headers.get("request-id");
  expect(requestId, where).toMatch(/^req_/);
  const body = JSON.parse(res.text) as { data?: unknown; errors?: { message?: unknown; extensions?: { code?: unknown; request_id?: unknown } }[] };
  expect("data" in body || "errors" in body, where).toBe(true);
  if (res.status >= 400) expect(body.errors?.length, where).toBeGreaterThan(0);
  for (const error of body.errors ?? []) {
    expect(GRAPHQL_CODES.has(String(error.extensions?.code)), `${String(error.extensions?.code)}: ${where}`).toBe(true);
    expect(error.extensions?.code, where).not.toBe("internal_error");
    expect(error.extensions?.request_id, where).toBe(requestId);
    expect(typeof error.message, where).toBe("string");
  }
}

/** fast-check's report, headed by the seed and target so the failure can be replayed. */
function reportWithSeed<T>(target: string) {
  return (details: fc.RunDetails<T>) => {
    if (!details.failed) return;
    const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(`fuzz failure on ${target} (FUZZ_SEED=${SEED}):\n${fc.defaultReportMessage(details) ?? ""}\n${cause}`);
  };
}
