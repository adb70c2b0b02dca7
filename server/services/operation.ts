import type { z } from "zod";
import type { ErrorCode } from "../kernel/errors";
import type { StoredBlob } from "../storage/blobs";
import type { Actor } from "./access/actor";
import type { CurrentSecret } from "./access/idempotency";
import type { Scope } from "./access/scopes";

// A /v1 operation, declared once beside the service it calls (docs/development.md, "Adding an
// operation"). The HTTP route, the production fast path, the OpenAPI document, the client
// library's types and the MCP tools that mirror it are all derived from the declaration.

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface OperationContext<Q, B> {
  actor: Actor;
  query: Q;
  body: B;
  /** The request body, already in storage, for operations declared with `upload`. */
  upload: StoredBlob | undefined;
  requestId: string;
  request: Request;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface Operation<QS extends z.ZodType | undefined = z.ZodType | undefined, BS extends z.ZodType | undefined = z.ZodType | undefined, RS extends z.ZodType | undefined = z.ZodType | undefined> {
  method: Method;
  path: string;
  /** One line: the reference's title for it. */
  summary: string;
  /** A paragraph for the reference. */
  description?: string;
  tag: string;
  /** Scope the key needs; when absent, every key may call it. */
  scope?: Scope;
  query?: QS;
  body?: BS;
  /** Success status (default 200). */
  status?: number;
  /** Success body; absent for a redirect or a stream. */
  response?: RS;
  redirect?: boolean;
  /** Answers server-sent events (each `data` a WebhookEvent). */
  stream?: boolean;
  /** Errors besides authentication, scope and rate limit, which every operation may answer. */
  errors: readonly ErrorCode[];
  /** A request body or query to show in the reference. */
  example?: Record<string, unknown>;
  /** Serve repeated identical reads from the change-versioned read cache. */
  cache?: boolean;
  /**
   * The body is the file's raw bytes, streamed into storage (at most maxBytes); `check` refuses
   * bad headers before the body is read.
   */
  upload?: { maxBytes: number; check?: (request: Request) => void };
  /** The answer's `secret` as it is now: an Idempotency-Key replay shows it only while unchanged. */
  replaySecret?: CurrentSecret;
  handler(ctx: OperationContext<Out<QS>, Out<BS>>): Promise<object | Response>;
}

/** Types a declaration: the handler's context from its schemas, the rest as written. */
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
/** The key guardrails' limits on sends they count, on top of WRITE_ERRORS. */
export const COUNTED_ERRORS: ErrorCode[] = ["reply_required", "key_send_limit_exceeded"];
/** Another line's webhook is 403, as every object of a line the key may not use. */
export const WEBHOOK_ERRORS: ErrorCode[] = ["webhook_not_found", "line_not_accessible", "invalid_parameter_value"];
