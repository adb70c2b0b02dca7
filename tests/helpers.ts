import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { createApiKey } from "@/server/services/access/api-keys";
import { SCOPES, type Scope } from "@/server/services/access/scopes";
import type { GuardrailsInput } from "@/server/policy/key-guardrails";
import { database, getDb } from "@/server/db";
import { createAccount } from "@/server/services/accounts/accounts";
import { createLine } from "@/server/services/lines/lines";
import { createConnectedLine } from "@/server/services/lines/line-connections";
import { providerLine } from "@/server/platform/connection";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { startWebhookRunner, stopWebhookRunner } from "@/server/engine/webhook-runner";
import { startChores, stopChores } from "@/server/engine/chores";
import type { FakeTwilio } from "./fakes/twilio";

/** Runs the outbox runner, the webhook sender and the delivery chores (not the line probes) while this file's tests run. */
export function runDelivery(): void {
  beforeAll(async () => {
    await startRunner();
    startWebhookRunner();
    startChores((chore) => chore.id !== "probe-due-lines");
  });
  afterAll(async () => {
    await stopChores();
    await stopWebhookRunner();
    await stopRunner();
  });
}

// Factories and an in-process HTTP client that calls the real route modules, so tests see
// exactly what a client sees: status, headers and JSON body.

type RouteModule = Record<string, unknown>;
const ROUTES: Record<string, () => Promise<RouteModule>> = {
  "/v1/openapi.json": () => import("@/app/v1/openapi.json/route"),
  "/api/simulator/messages": () => import("@/app/api/simulator/messages/route"),
  "/api/simulator/reactions": () => import("@/app/api/simulator/reactions/route"),
  "/api/simulator/typing": () => import("@/app/api/simulator/typing/route"),
  "/api/simulator/receipts": () => import("@/app/api/simulator/receipts/route"),
  "/api/simulator/reachability": () => import("@/app/api/simulator/reachability/route"),
  "/api/graphql": () => import("@/app/api/graphql/route"),
  "/api/mcp": () => import("@/app/api/mcp/route"),
  "/healthz": () => import("@/app/healthz/route"),
  "/readyz": () => import("@/app/readyz/route"),
  "/metrics": () => import("@/app/metrics/route"),
};

export interface ApiResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Raw body, sent as is. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
}

/** The real route module's answer to a request, in-process (also a `fetch` for the client library). */
export async function dispatch(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname.startsWith("/api/inbound/")) {
    const mod = (await import("@/app/api/inbound/[lineId]/route")) as unknown as Record<string, (r: Request, c: { params: Promise<{ lineId: string }> }) => Promise<Response> | Response>;
    const handler = mod[request.method];
    if (!handler) return new Response(null, { status: 405 });
    return handler(request, { params: Promise.resolve({ lineId: url.pathname.split("/").pop()! }) });
  }
  if (url.pathname.startsWith("/api/files/")) {
    const { GET } = await import("@/app/api/files/[id]/route");
    return GET(request, { params: Promise.resolve({ id: url.pathname.split("/").pop()! }) });
  }
  const loader = ROUTES[url.pathname] ?? v1CatchAll(url.pathname);
  // What Next answers where no route module matches, or the module lacks the method.
  if (!loader) return new Response("<!DOCTYPE html><title>404: This page could not be found.</title>", { status: 404, headers: { "content-type": "text/html; charset=utf-8" } });
  const mod = await loader();
  const handler = mod[request.method] as ((r: Request) => Promise<Response>) | undefined;
  if (!handler) return new Response(null, { status: 405 });
  return handler(request);
}

/**
 * The /v1 catch-all route, matched as Next matches it: `[...path]` needs at least one segment
 * after /v1, `[[...path]]` also matches /v1 itself.
 */
function v1CatchAll(pathname: string): (() => Promise<RouteModule>) | undefined {
  const v1 = path.resolve(import.meta.dirname, "../app/v1");
  for (const [dir, matches] of [
    ["[[...path]]", /^\/v1(\/.*)?$/],
    ["[...path]", /^\/v1\/.+$/],
  ] as const) {
    const file = path.join(v1, dir, "route.ts");
    if (existsSync(file) && matches.test(pathname)) return () => import(/* @vite-ignore */ file) as Promise<RouteModule>;
  }
  return undefined;
}

export async function call(method: string, pathAndQuery: string, options: CallOptions = {}): Promise<ApiResult> {
  const url = new URL(pathAndQuery, "http://localhost:3000");
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | Uint8Array | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] = "application/json";
  }
  const response = await dispatch(new Request(url, { method, headers, body: body as BodyInit | undefined }));
  const text = response.headers.get("content-type")?.includes("json") ? await response.text() : null;
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** A GraphQL operation through the real /api/graphql route; the body is { data, errors }. */
export const gql = (key: string | null, query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) =>
  call("POST", "/api/graphql", { key, body: { query, variables }, headers });

/** What the subscriptions under test answer (one of the two fields per event). */
interface SubscriptionData {
  messageReceived: { id: string; text: string | null } & Record<string, unknown>;
  outboxItemUpdated: { status: string; outboxId: string; item: unknown };
  chatActivity: { kind: string; chatId: string; lineId: string; typing: boolean | null };
}

export interface SseEvent {
  event: string;
  data: { data?: SubscriptionData; errors?: { message: string; extensions: Record<string, unknown> }[] } | null;
}

/** A GraphQL subscription over server-sent events through the real route: read its events one by one. */
export async function subscribe(key: string, query: string, variables: Record<string, unknown> = {}) {
  const { POST } = await import("@/app/api/graphql/route");
  const response = await POST(
    new Request("http://localhost:3000/api/graphql", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query, variables }),
    }),
  );
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  /** The next event (keep-alive comments skipped). */
  async function next(): Promise<SseEvent> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split("\n").filter((l) => !l.startsWith(":"));
        if (!lines.length) continue;
        const event = lines.find((l) => l.startsWith("event:"))?.slice(6).trim() ?? "message";
        const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        return { event, data: data ? JSON.parse(data) : null };
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the event stream ended");
      buffer += decoder.decode(value, { stream: true });
    }
  }
  return { response, next, close: () => reader.cancel() };
}

export const get = (path: string, key?: string | null, headers?: Record<string, string>) => call("GET", path, { key, headers });
export const post = (path: string, key: string | null, body?: unknown) => call("POST", path, { key, body });

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}${randomBytes(2).toString("hex")}`;

/** A phone number no other test in this file uses. */
export function phone(): string {
  return `+1555${Math.floor(1_000_000 + Math.random() * 8_999_999)}`;
}

export interface Fixture {
  accountId: string;
  email: string;
  line: { id: string; handle: string };
  key: string;
}

export async function makeAccount(
  options: { noOwner?: boolean; advanced?: boolean; service?: "imessage" | "sms" | "auto"; scopes?: Scope[] } = {},
): Promise<Fixture> {
  const email = `user-${unique()}@example.com`;
  const account = await createAccount({ email, noOwner: options.noOwner });
  const line = await createLine({
    accountId: account.id,
    handle: phone(),
    advancedFeatures: options.advanced ?? true,
    service: options.service,
  });
  const { secret } = await createApiKey({ accountId: account.id, name: "test", scopes: options.scopes ?? [...SCOPES] });
  return { accountId: account.id, email, line: { id: line.id, handle: line.handle }, key: secret };
}

export async function makeKey(
  accountId: string,
  options: { scopes?: Scope[]; lineIds?: string[] | null; rateLimitPerHour?: number; expiresAt?: Date; guardrails?: GuardrailsInput } = {},
): Promise<string> {
  const { secret } = await createApiKey({
    accountId,
    name: options.guardrails ? "agent" : "extra",
    // A key with guardrails cannot approve: every scope but that one.
    scopes: options.scopes ?? SCOPES.filter((s) => !(options.guardrails && s === "outbox:approve")),
    guardrails: options.guardrails,
    lineIds: options.lineIds ?? null,
    rateLimitPerHour: options.rateLimitPerHour,
    expiresAt: options.expiresAt,
  });
  return secret;
}

/** The other phone texts the line (through the simulator, as a client would). */
export async function inbound(f: Fixture, from: string, text = "hi", extra: Record<string, unknown> = {}) {
  const res = await post("/api/simulator/messages", f.key, { line: f.line.handle, from, text, ...extra });
  if (res.status !== 201) throw new Error(`simulator failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function db() {
  return getDb();
}

type QueryFn = (...args: unknown[]) => Promise<unknown>;

/**
 * The SQL statements sent to the database while `fn` runs, counted at the driver (the pg pool
 * and the clients it lends, or PGlite and its transactions), so whatever Prisma makes of an
 * operation is seen.
 */
export async function recordQueries<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const record = (target: { query: QueryFn }) => {
    const original = target.query;
    target.query = function (this: unknown, ...args: unknown[]) {
      const first = args[0];
      statements.push(typeof first === "string" ? first : String((first as { text?: string }).text));
      return original.apply(this, args);
    };
    return () => (target.query = original);
  };
  const d = await database();
  const restore: (() => void)[] = [];
  if (d.pool) {
    const pool = d.pool as unknown as { query: QueryFn; connect: QueryFn };
    restore.push(record(pool));
    const connect = pool.connect;
    pool.connect = function (this: unknown, ...args: unknown[]) {
      // pool.query borrows a client through the callback form: those statements are counted above.
      if (typeof args[0] === "function") return connect.apply(this, args);
      return connect.apply(this, args).then(lend);
    };
    const lend = (borrowed: unknown) => {
      const client = borrowed as { query: QueryFn; release: QueryFn };
      const unrecord = record(client);
      const release = client.release;
      client.release = function (this: unknown, ...rest: unknown[]) {
        unrecord();
        client.release = release;
        return release.apply(this, rest);
      };
      return client;
    };
    restore.push(() => (pool.connect = connect));
  }
  if (d.pglite) {
    const pglite = d.pglite as unknown as { query: QueryFn; transaction: QueryFn };
    restore.push(record(pglite));
    const transaction = pglite.transaction;
    pglite.transaction = function (this: unknown, callback: unknown) {
      return transaction.call(this, (tx: { query: QueryFn }) => {
        record(tx);
        return (callback as (tx: unknown) => unknown)(tx);
      });
    };
    restore.push(() => (pglite.transaction = transaction));
  }
  try {
    return { result: await fn(), statements };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}

export function expectRequestId(res: ApiResult): void {
  const id = res.body?.request_id;
  if (typeof id !== "string" || !id.startsWith("req_")) throw new Error(`no request_id in ${JSON.stringify(res.body)}`);
  if (res.headers.get("request-id") !== id) throw new Error("Request-Id header differs from body request_id");
}

/** A new account with a line connected to a BlueBubbles server (a fake's url and password). */
export async function blueBubblesLine(
  bb: { url: string; password: string },
  options: { service?: "imessage" | "sms" | "auto"; rate?: number; timeout?: number } = {},
): Promise<Fixture & { line: { id: string; handle: string } }> {
  const f = await makeAccount();
  const report = await createConnectedLine({
    accountId: f.accountId,
    handle: phone(),
    service: options.service,
    provider: "bluebubbles",
    providerConfig: { url: bb.url, password: bb.password, sendTimeoutSeconds: options.timeout ?? 5 },
    sendRatePerSecond: options.rate ?? 50,
  });
  return { ...f, line: { id: report.line.id, handle: report.line.handle } };
}

/** A new account with a line on a fake Twilio's first number, the number's incoming webhook pointed at the line. */
export async function fakeTwilioLine(tw: FakeTwilio): Promise<Fixture & { line: { id: string; handle: string }; inboundUrl: string }> {
  const f = await makeAccount();
  const report = await createConnectedLine({
    accountId: f.accountId,
    handle: tw.numbers[0]!,
    provider: "twilio",
    providerConfig: { accountSid: tw.accountSid, authToken: tw.authToken, baseUrl: tw.url },
  });
  const inboundUrl = providerLine(await (await db()).line.findUniqueOrThrow({ where: { id: report.line.id } })).inboundUrl;
  tw.incomingUrl = inboundUrl;
  return { ...f, line: { id: report.line.id, handle: report.line.handle }, inboundUrl };
}
