import type { z } from "zod";
import type { ErrorCode } from "../kernel/errors";
import type { StoredBlob } from "../storage/blobs";
import type { Actor } from "./access/actor";
import type { CurrentSecret } from "./access/idempotency";
import type { Scope } from "./access/scopes";

// Declared once beside its service: the route, the fast path, OpenAPI, the client's types and MCP tools derive from it.

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface OperationContext<Q, B> {
  actor: Actor;
  query: Q;
  body: B;
  upload: StoredBlob | undefined;
  requestId: string;
  request: Request;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface Operation<QS extends z.ZodType | undefined = z.ZodType | undefined, BS extends z.ZodType | undefined = z.ZodType | undefined, RS extends z.ZodType | undefined = z.ZodType | undefined> {
  method: Method;
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Scope the key needs; when absent, every key may call it. */
  scope?: Scope;
  query?: QS;
  body?: BS;
  status?: number;
  response?: RS;
  redirect?: boolean;
  stream?: boolean;
  /** Errors besides authentication, scope and rate limit, which every operation may answer. */
  errors: readonly ErrorCode[];
  example?: Record<string, unknown>;
  cache?: boolean;
  /** The body is the raw bytes, streamed into storage; `check` refuses bad headers before it is read. */
  upload?: { maxBytes: number; check?: (request: Request) => void };
  /** The body's items are parsed one by one by the handler, each refused alone (a batch). */
  batch?: boolean;
  /** The answer's `secret` as it is now: an Idempotency-Key replay shows it only while unchanged. */
  replaySecret?: CurrentSecret;
  handler(ctx: OperationContext<Out<QS>, Out<BS>>): Promise<object | Response>;
}

export const operation = <QS extends z.ZodType | undefined = undefined, BS extends z.ZodType | undefined = undefined, RS extends z.ZodType | undefined = undefined>(
  op: Operation<QS, BS, RS> & { response?: RS },
): Operation<QS, BS, RS> & { query: QS; body: BS; response: RS } => op as Operation<QS, BS, RS> & { query: QS; body: BS; response: RS };

export const COMMON_ERRORS: ErrorCode[] = [
  "missing_api_key",
  "invalid_api_key",
  "insufficient_scope",
  "rate_limit_exceeded",
  "internal_error",
  "service_unavailable",
  // Headers over Node's limit (16 KiB by default) are refused before any route runs.
  "request_headers_too_large",
];
export const LINE_ERRORS: ErrorCode[] = ["line_not_found", "line_not_accessible", "sandbox_not_activated", "sandbox_requires_owner", "invalid_parameter_value", "missing_required_parameter"];
export const WRITE_ERRORS: ErrorCode[] = [
  ...LINE_ERRORS,
  "chat_not_found",
  "contact_has_not_messaged",
  "sandbox_contact_mismatch",
  "sandbox_quota_exceeded",
  "idempotency_key_reused",
  "idempotency_key_in_use",
  "invalid_json",
  "recipient_not_allowed",
  "chat_paused",
];
export const COUNTED_ERRORS: ErrorCode[] = ["reply_required", "key_send_limit_exceeded"];
/** Another line's webhook is 403, as every object of a line the key may not use. */
export const WEBHOOK_ERRORS: ErrorCode[] = ["webhook_not_found", "line_not_accessible", "invalid_parameter_value"];
