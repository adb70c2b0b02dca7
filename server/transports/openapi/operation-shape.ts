import type { z } from "zod";
import type { Scope } from "../../services/access/scopes";
import type { ErrorCode } from "../../kernel/errors";

// What a /v1 operation declares (operations.ts lists them), and the error codes groups of
// operations share.

export interface Operation {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Scope the key needs; when absent, every key may call it. */
  scope?: Scope;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The body is the file's raw bytes (POST /v1/files). */
  rawBody?: boolean;
  status?: number;
  /** Success body; absent for a redirect or a stream. */
  response?: z.ZodType;
  redirect?: boolean;
  /** Answers server-sent events (each `data` a WebhookEvent). */
  stream?: boolean;
  /** Errors besides authentication, scope and rate limit, which every operation may answer. */
  errors: ErrorCode[];
  /** A request body or query to show in the reference. */
  example?: Record<string, unknown>;
}

export const COMMON_ERRORS: ErrorCode[] = [
  "missing_api_key",
  "invalid_api_key",
  "insufficient_scope",
  "rate_limit_exceeded",
  "internal_error",
  // The database is unreachable or overloaded: retry after Retry-After.
  "service_unavailable",
  // Headers over Node's limit (16 KiB by default), refused before any route runs.
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
  // Guardrails of the key (docs/agents.md).
  "recipient_not_allowed",
  "chat_paused",
];
/** Sends that guardrails count: the limits on top of WRITE_ERRORS. */
export const COUNTED_ERRORS: ErrorCode[] = ["reply_required", "key_send_limit_exceeded"];

/** Operations that name a webhook (or its delivery): another line's is 403, as every object of a line the key may not use. */
export const WEBHOOK_ERRORS: ErrorCode[] = ["webhook_not_found", "line_not_accessible", "invalid_parameter_value"];
