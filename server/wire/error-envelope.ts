import type { ApiError } from "../kernel/errors";

/** The /v1 error envelope of an ApiError: { error: { type, code, message, param? }, request_id }. */
export function errorEnvelope(err: ApiError, requestId: string): { error: Record<string, string>; request_id: string } {
  const error: Record<string, string> = { type: err.type, code: err.code, message: err.message };
  if (err.param !== undefined) error.param = err.param;
  return { error, request_id: requestId };
}
