// The code table of SPEC.md "Errors" and the extensions docs/api.md lists. Services throw
// ApiError; each transport translates it.

export const ERROR_CODES = {
  missing_api_key: { type: "authentication_error", status: 401 },
  invalid_api_key: { type: "authentication_error", status: 401 },
  invalid_inbound_token: { type: "authentication_error", status: 401 },
  invalid_signature: { type: "authentication_error", status: 403 },
  invalid_webhook_signature: { type: "authentication_error", status: 401 },
  session_required: { type: "authentication_error", status: 401 },
  insufficient_scope: { type: "authorization_error", status: 403 },
  line_not_accessible: { type: "authorization_error", status: 403 },
  sandbox_not_activated: { type: "authorization_error", status: 403 },
  sandbox_requires_owner: { type: "authorization_error", status: 403 },
  missing_required_parameter: { type: "invalid_request_error", status: 400 },
  invalid_parameter_value: { type: "invalid_request_error", status: 400 },
  invalid_json: { type: "invalid_request_error", status: 400 },
  empty_file: { type: "invalid_request_error", status: 400 },
  file_too_large: { type: "invalid_request_error", status: 413 },
  request_too_large: { type: "invalid_request_error", status: 413 },
  unsupported_media_type: { type: "invalid_request_error", status: 415 },
  method_not_allowed: { type: "invalid_request_error", status: 405 },
  malformed_request: { type: "invalid_request_error", status: 400 },
  request_headers_too_large: { type: "invalid_request_error", status: 431 },
  request_timeout: { type: "invalid_request_error", status: 408 },
  advanced_features_required: { type: "invalid_request_error", status: 400 },
  sandbox_contact_mismatch: { type: "invalid_request_error", status: 400 },
  idempotency_key_reused: { type: "invalid_request_error", status: 400 },
  idempotency_key_in_use: { type: "invalid_request_error", status: 409 },
  contact_has_not_messaged: { type: "invalid_request_error", status: 403 },
  line_limit_reached: { type: "invalid_request_error", status: 403 },
  recipient_not_allowed: { type: "authorization_error", status: 403 },
  reply_required: { type: "authorization_error", status: 403 },
  chat_paused: { type: "invalid_request_error", status: 409 },
  outbox_item_not_reviewable: { type: "invalid_request_error", status: 409 },
  line_not_found: { type: "not_found_error", status: 404 },
  chat_not_found: { type: "not_found_error", status: 404 },
  message_not_found: { type: "not_found_error", status: 404 },
  outbox_item_not_found: { type: "not_found_error", status: 404 },
  outbox_item_not_cancelable: { type: "invalid_request_error", status: 409 },
  outbox_item_not_reschedulable: { type: "invalid_request_error", status: 409 },
  pool_not_found: { type: "not_found_error", status: 404 },
  webhook_not_found: { type: "not_found_error", status: 404 },
  delivery_not_found: { type: "not_found_error", status: 404 },
  file_not_found: { type: "not_found_error", status: 404 },
  api_key_not_found: { type: "not_found_error", status: 404 },
  route_not_found: { type: "not_found_error", status: 404 },
  query_too_complex: { type: "invalid_request_error", status: 400 },
  batch_too_large: { type: "invalid_request_error", status: 400 },
  csrf_header_required: { type: "invalid_request_error", status: 403 },
  introspection_disabled: { type: "invalid_request_error", status: 400 },
  rate_limit_exceeded: { type: "rate_limit_error", status: 429 },
  sandbox_quota_exceeded: { type: "rate_limit_error", status: 429 },
  key_send_limit_exceeded: { type: "rate_limit_error", status: 429 },
  too_many_streams: { type: "rate_limit_error", status: 429 },
  internal_error: { type: "api_error", status: 500 },
  audio_conversion_unavailable: { type: "api_error", status: 503 },
  audio_conversion_busy: { type: "api_error", status: 503 },
  server_shutting_down: { type: "api_error", status: 503 },
  service_unavailable: { type: "api_error", status: 503 },
  storage_unavailable: { type: "api_error", status: 503 },
} as const satisfies Record<string, { type: string; status: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorType = (typeof ERROR_CODES)[ErrorCode]["type"];

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { param?: string; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }

  get type(): ErrorType {
    return ERROR_CODES[this.code].type;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const missingParam = (param: string) =>
  new ApiError("missing_required_parameter", `Missing required parameter: ${param}.`, { param });

export const invalidParam = (param: string, message: string) =>
  new ApiError("invalid_parameter_value", message, { param });
