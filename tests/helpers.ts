import { randomBytes } from "node:crypto";
import { createApiKey } from "@/server/auth/api-keys";
import { SCOPES, type Scope } from "@/server/auth/scopes";
import { getDb } from "@/server/db";
import { createAccount } from "@/server/services/accounts";
import { createLine } from "@/server/services/lines";

// Factories and an in-process HTTP client that calls the real route modules, so tests see
// exactly what a client sees: status, headers and JSON body.

type RouteModule = Record<string, unknown>;
const ROUTES: Record<string, () => Promise<RouteModule>> = {
  "/v1/lines": () => import("@/app/v1/lines/route"),
  "/v1/chats": () => import("@/app/v1/chats/route"),
  "/v1/messages": () => import("@/app/v1/messages/route"),
  "/v1/audio-messages": () => import("@/app/v1/audio-messages/route"),
  "/v1/reactions": () => import("@/app/v1/reactions/route"),
  "/v1/typing": () => import("@/app/v1/typing/route"),
  "/v1/receipts": () => import("@/app/v1/receipts/route"),
  "/v1/outbox": () => import("@/app/v1/outbox/route"),
  "/v1/sandbox": () => import("@/app/v1/sandbox/route"),
  "/v1/files": () => import("@/app/v1/files/route"),
  "/v1/webhooks": () => import("@/app/v1/webhooks/route"),
  "/v1/webhooks/deliveries": () => import("@/app/v1/webhooks/deliveries/route"),
  "/v1/webhooks/deliveries/resend": () => import("@/app/v1/webhooks/deliveries/resend/route"),
  "/v1/webhooks/rotate-secret": () => import("@/app/v1/webhooks/rotate-secret/route"),
  "/v1/webhooks/enable": () => import("@/app/v1/webhooks/enable/route"),
  "/v1/webhooks/disable": () => import("@/app/v1/webhooks/disable/route"),
  "/api/simulator/messages": () => import("@/app/api/simulator/messages/route"),
  "/api/simulator/reactions": () => import("@/app/api/simulator/reactions/route"),
  "/api/simulator/typing": () => import("@/app/api/simulator/typing/route"),
  "/api/simulator/receipts": () => import("@/app/api/simulator/receipts/route"),
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

export async function call(method: string, pathAndQuery: string, options: CallOptions = {}): Promise<ApiResult> {
  const url = new URL(pathAndQuery, "http://localhost:3000");
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | Uint8Array | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] = "application/json";
  }
  const request = new Request(url, { method, headers, body: body as BodyInit | undefined });
  let response: Response;
  if (url.pathname.startsWith("/api/files/")) {
    const { GET } = await import("@/app/api/files/[id]/route");
    response = await GET(request, { params: Promise.resolve({ id: url.pathname.split("/").pop()! }) });
  } else {
    const loader = ROUTES[url.pathname] ?? (() => import("@/app/v1/[...path]/route") as Promise<RouteModule>);
    const mod = await loader();
    const handler = mod[method] as (r: Request) => Promise<Response>;
    response = await handler(request);
  }
  const text = response.headers.get("content-type")?.includes("json") ? await response.text() : null;
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
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
  options: { noOwner?: boolean; advanced?: boolean; service?: "imessage" | "sms"; scopes?: Scope[] } = {},
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
  options: { scopes?: Scope[]; lineIds?: string[] | null; rateLimitPerHour?: number; expiresAt?: Date } = {},
): Promise<string> {
  const { secret } = await createApiKey({
    accountId,
    name: "extra",
    scopes: options.scopes ?? [...SCOPES],
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

export function expectRequestId(res: ApiResult): void {
  const id = res.body?.request_id;
  if (typeof id !== "string" || !id.startsWith("req_")) throw new Error(`no request_id in ${JSON.stringify(res.body)}`);
  if (res.headers.get("request-id") !== id) throw new Error("Request-Id header differs from body request_id");
}
