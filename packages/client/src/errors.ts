export interface RelayErrorInit {
  type: string;
  code: string;
  message: string;
  status?: number;
  param?: string;
  requestId?: string;
  retryAfterMs?: number;
  cause?: unknown;
}

export class RelayError extends Error {
  /** authentication_error | authorization_error | invalid_request_error | not_found_error | rate_limit_error | api_error | connection_error */
  readonly type: string;
  /** The API's stable code (e.g. `contact_has_not_messaged`), or `connection_error` / `timeout`. */
  readonly code: string;
  readonly status: number | undefined;
  readonly param: string | undefined;
  /** Quote it in bug reports. */
  readonly requestId: string | undefined;
  /** From Retry-After, when the API sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: RelayErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.type = init.type;
    this.code = init.code;
    this.status = init.status;
    this.param = init.param;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 401: missing or invalid API key. */
export class AuthenticationError extends RelayError {}
/** 403: a scope, a line, or a guardrail of the key (the owner's rule: do not retry). */
export class AuthorizationError extends RelayError {}
/** 400, 403 contact_has_not_messaged, 409 and 413: the request is wrong. */
export class InvalidRequestError extends RelayError {}
export class NotFoundError extends RelayError {}
/** 429; see retryAfterMs. */
export class RateLimitError extends RelayError {}
/** 5xx. */
export class ApiError extends RelayError {}
export class ConnectionError extends RelayError {}
export class TimeoutError extends ConnectionError {}

const BY_TYPE: Record<string, typeof RelayError> = {
  authentication_error: AuthenticationError,
  authorization_error: AuthorizationError,
  invalid_request_error: InvalidRequestError,
  not_found_error: NotFoundError,
  rate_limit_error: RateLimitError,
  api_error: ApiError,
};

function typeForStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "authorization_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

const STATUS_BY_TYPE: Record<string, number> = {
  authentication_error: 401,
  authorization_error: 403,
  invalid_request_error: 400,
  not_found_error: 404,
  rate_limit_error: 429,
  api_error: 500,
};

/** An `error` event that ends GET /v1/listen: the envelope, with the status its type has in a response. */
export function errorFromStreamEvent(data: string): RelayError {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    body = {};
  }
  const type = (body as { error?: { type?: unknown } }).error?.type;
  return errorFromResponse(typeof type === "string" ? (STATUS_BY_TYPE[type] ?? 500) : 500, body, new Headers(), undefined);
}

export function errorFromResponse(status: number, body: unknown, headers: Headers, retryAfterMs: number | undefined): RelayError {
  const envelope = (typeof body === "object" && body !== null ? body : {}) as {
    error?: { type?: unknown; code?: unknown; message?: unknown; param?: unknown };
    request_id?: unknown;
  };
  const e = envelope.error ?? {};
  const type = typeof e.type === "string" ? e.type : typeForStatus(status);
  const Class = BY_TYPE[type] ?? BY_TYPE[typeForStatus(status)]!;
  const requestId = typeof envelope.request_id === "string" ? envelope.request_id : (headers.get("request-id") ?? undefined);
  return new Class({
    type,
    code: typeof e.code === "string" ? e.code : `http_${status}`,
    message: typeof e.message === "string" ? e.message : `HTTP ${status}`,
    status,
    param: typeof e.param === "string" ? e.param : undefined,
    requestId,
    retryAfterMs,
  });
}
