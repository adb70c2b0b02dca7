import { PothosValidationError } from "@pothos/core";
import { type ExecutionResult, GraphQLError } from "graphql";
import { databaseUnavailableError } from "../../db/database-failures";
import { ApiError } from "../../kernel/errors";
import { log } from "../../kernel/log";
import { metrics } from "../../observability/metrics";

// The GraphQL translator of ApiError (docs/graphql.md, "Errors"): a request-level error (no field
// path) also sets the HTTP status and headers /v1 would answer with; anything else is masked.

/** Codes of the errors GraphQL and yoga find themselves; every other code is the REST table's. */
export const GRAPHQL_PROTOCOL_CODES = [
  "GRAPHQL_PARSE_FAILED",
  "GRAPHQL_VALIDATION_FAILED",
  "BAD_USER_INPUT",
  "OPERATION_RESOLUTION_FAILURE",
  "BAD_REQUEST",
] as const;

/** REST parameter names in the GraphQL spelling: reply_to -> replyTo, attachment.mime_type -> attachment.mimeType. */
export const graphqlParam = (param: string) => param.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** Causes of masked errors, logged once the request ID is known. */
const causes = new WeakMap<GraphQLError, unknown>();
/** Errors this module masked itself, so yoga's logger does not print them a second time. */
const handled = new WeakSet<object>();

const located = (error: unknown) =>
  error instanceof GraphQLError ? { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path } : {};

export function maskError(error: unknown): GraphQLError {
  const cause = error instanceof GraphQLError ? error.originalError : error;
  // Pothos refuses bad connection arguments (a negative first, a cursor it did not issue).
  const original = cause instanceof PothosValidationError ? new ApiError("invalid_parameter_value", cause.message) : (databaseUnavailableError(cause) ?? cause);
  if (error instanceof GraphQLError && (!original || original instanceof GraphQLError)) return error; // GraphQL's own
  if (typeof error === "object" && error !== null) handled.add(error);
  const where = located(error);
  const requestLevel = !where.path;
  if (original instanceof ApiError) {
    if (original.type === "rate_limit_error") metrics().rateLimited.inc({ code: original.code });
    return new GraphQLError(original.message, {
      ...where,
      extensions: {
        code: original.code,
        type: original.type,
        ...(original.param !== undefined ? { param: graphqlParam(original.param) } : {}),
        ...(requestLevel ? { http: { status: original.status, headers: original.headers } } : {}),
      },
    });
  }
  const masked = new GraphQLError("An unexpected error occurred. Quote the request_id when reporting it.", {
    ...where,
    extensions: { code: "internal_error", type: "api_error", ...(requestLevel ? { http: { status: 500 } } : {}) },
  });
  causes.set(masked, original);
  return masked;
}

/** Whether yoga's logger should stay quiet about an error: expected, or logged by withRequestId with its request ID. */
export const isHandledError = (value: unknown) => typeof value === "object" && value !== null && handled.has(value);

export function withRequestId<R extends ExecutionResult>(result: R, requestId: string): R {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((error) => {
    if (causes.has(error)) log().error({ err: causes.get(error), request_id: requestId }, "unexpected GraphQL error");
    return new GraphQLError(error.message, {
      ...located(error),
      originalError: error.originalError,
      // GraphQL leaves variable coercion errors ($x got an invalid value) without a code.
      extensions: { ...error.extensions, code: error.extensions.code ?? "BAD_USER_INPUT", request_id: requestId },
    });
  });
  return { ...result, errors };
}
