// One error type and the code table of SPEC.md "Errors". Services throw ApiError; each
// transport translates it (REST envelope, GraphQL extensions.code, tRPC).

export const ERROR_CODES = {
  missing_api_key: { type: "authentication_error", status: 401 },
  invalid_api_key: { type: "authentication_error", status: 401 },
  /** Extension (POST /api/inbound/<line>): a provider webhook without this line's URL token. */
  invalid_inbound_token: { type: "authentication_error", status: 401 },
  /** Extension (POST /api/inbound/<line>): a provider webhook whose signature does not verify. */
  invalid_signature: { type: "authentication_error", status: 403 },
  /** Extension (POST /api/inbound/<line>): a webhook whose signature or timestamp does not verify (SMS Gateway: X-Signature, X-Timestamp within 5 minutes). */
  invalid_webhook_signature: { type: "authentication_error", status: 401 },
  /** Extension (dashboard, GraphQL): no signed-in session. */
  session_required: { type: "authentication_error", status: 401 },
  insufficient_scope: { type: "authorization_error", status: 403 },
  line_not_accessible: { type: "authorization_error", status: 403 },
  sandbox_not_activated: { type: "authorization_error", status: 403 },
  sandbox_requires_owner: { type: "authorization_error", status: 403 },
  missing_required_parameter: { type: "invalid_request_error", status: 400 },
  invalid_parameter_value: { type: "invalid_request_error", status: 400 },
  invalid_json: { type: "invalid_request_error", status: 400 },
  empty_file: { type: "invalid_request_error", status: 400 },
  /** Extension: 413, an upload over the file limit (POST /v1/files 100 MiB). */
  file_too_large: { type: "invalid_request_error", status: 413 },
  /** Extension: a request body over the limit (JSON bodies MAX_JSON_BODY_BYTES, 1 MiB by default; GraphQL 16 MiB). */
  request_too_large: { type: "invalid_request_error", status: 413 },
  /** Extension: a body whose Content-Type is not what the route reads (application/json for /v1 and GraphQL, a form for some providers). */
  unsupported_media_type: { type: "invalid_request_error", status: 415 },
  /** Extension: a method no route of the server serves (TRACE, WebDAV, …), or GET/PUT/DELETE on an inbound URL; with Allow. */
  method_not_allowed: { type: "invalid_request_error", status: 405 },
  /** Extension: a request Node's HTTP parser refused (control characters, a malformed request line or header). */
  malformed_request: { type: "invalid_request_error", status: 400 },
  /** Extension: request headers over Node's limit (16 KiB by default). */
  request_headers_too_large: { type: "invalid_request_error", status: 431 },
  /** Extension: a request whose headers or body did not arrive in time (Node's requestTimeout). */
  request_timeout: { type: "invalid_request_error", status: 408 },
  advanced_features_required: { type: "invalid_request_error", status: 400 },
  sandbox_contact_mismatch: { type: "invalid_request_error", status: 400 },
  idempotency_key_reused: { type: "invalid_request_error", status: 400 },
  idempotency_key_in_use: { type: "invalid_request_error", status: 409 },
  contact_has_not_messaged: { type: "invalid_request_error", status: 403 },
  /** Extension (dashboard, GraphQL, operator CLI): the account already has MAX_LINES_PER_ACCOUNT lines. */
  line_limit_reached: { type: "invalid_request_error", status: 403 },
  /** Extension (guardrails, docs/agents.md): the key's allow_to list does not name the recipient. */
  recipient_not_allowed: { type: "authorization_error", status: 403 },
  /** Extension (guardrails): the key reached max_sends_per_chat_without_reply in this chat. */
  reply_required: { type: "authorization_error", status: 403 },
  /** Extension (human takeover): the owner paused automated sending in the chat. */
  chat_paused: { type: "invalid_request_error", status: 409 },
  /** Extension: approve or reject of an item that no longer waits for approval. */
  outbox_item_not_reviewable: { type: "invalid_request_error", status: 409 },
  line_not_found: { type: "not_found_error", status: 404 },
  chat_not_found: { type: "not_found_error", status: 404 },
  message_not_found: { type: "not_found_error", status: 404 },
  outbox_item_not_found: { type: "not_found_error", status: 404 },
  /** Extension: DELETE /v1/outbox?id= for an item already claimed, sent or failed. */
  outbox_item_not_cancelable: { type: "invalid_request_error", status: 409 },
  /** Extension: PATCH /v1/outbox?id= for an item already claimed, sent or failed. */
  outbox_item_not_reschedulable: { type: "invalid_request_error", status: 409 },
  /** Extension: an unknown or foreign pool_ ID. */
  pool_not_found: { type: "not_found_error", status: 404 },
  webhook_not_found: { type: "not_found_error", status: 404 },
  /** Extension: GET /v1/webhooks/deliveries?id= and resend for an unknown or foreign dlv_ ID. */
  delivery_not_found: { type: "not_found_error", status: 404 },
  file_not_found: { type: "not_found_error", status: 404 },
  /** Extension (dashboard): an unknown or foreign API key ID. */
  api_key_not_found: { type: "not_found_error", status: 404 },
  route_not_found: { type: "not_found_error", status: 404 },
  /** Extension: a GraphQL operation over the depth, breadth or cost limit (docs/graphql.md). */
  query_too_complex: { type: "invalid_request_error", status: 400 },
  /** Extension (dashboard tRPC): a batched request with more calls than allowed (docs/dashboard.md, "Dashboard security"). */
  batch_too_large: { type: "invalid_request_error", status: 400 },
  /** Extension (GraphQL): a request authenticated by the session cookie without the CSRF header or a JSON body. */
  csrf_header_required: { type: "invalid_request_error", status: 403 },
  /** Extension (GraphQL): __schema or __type on a server with GRAPHQL_INTROSPECTION=off. */
  introspection_disabled: { type: "invalid_request_error", status: 400 },
  rate_limit_exceeded: { type: "rate_limit_error", status: 429 },
  sandbox_quota_exceeded: { type: "rate_limit_error", status: 429 },
  /** Extension (guardrails): the key reached max_sends_per_day (a sliding 24 hours); Retry-After says when a send fits. */
  key_send_limit_exceeded: { type: "rate_limit_error", status: 429 },
  /** Extension: more open streams (GET /v1/listen, GraphQL subscriptions) than MAX_STREAMS_PER_KEY / _PER_ACCOUNT. */
  too_many_streams: { type: "rate_limit_error", status: 429 },
  internal_error: { type: "api_error", status: 500 },
  /** Extension: POST /v1/audio-messages when ffmpeg (FFMPEG_PATH) cannot be run. */
  audio_conversion_unavailable: { type: "api_error", status: 503 },
  /** Extension: POST /v1/audio-messages while the conversion queue is full; with Retry-After. */
  audio_conversion_busy: { type: "api_error", status: 503 },
  /** Extension: GET /v1/listen on a server that is stopping (open streams just end); reconnect. */
  server_shutting_down: { type: "api_error", status: 503 },
  /** Extension: the database is unreachable or too busy to take the request (never an authentication error); with Retry-After, retry later. */
  service_unavailable: { type: "api_error", status: 503 },
  /** Extension: file storage (STORAGE_URL's bucket) could not be reached or refused the service's credentials; retry later. */
  storage_unavailable: { type: "api_error", status: 503 },
} as const satisfies Record<string, { type: string; status: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorType = (typeof ERROR_CODES)[ErrorCode]["type"];

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  /** Extra response headers, e.g. Retry-After. */
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
