import { config } from "../kernel/config";
import { ApiError } from "../kernel/errors";
import { log } from "../kernel/log";
import { processSingleton } from "../kernel/singleton";

// An unreachable or overloaded database is the service's trouble, not the caller's: 503 with
// Retry-After on every transport (docs/production.md), never an authentication error or a 500.

const DATABASE_RETRY_AFTER_SECONDS = 5;

export type DatabaseFailureKind = "unreachable" | "overloaded";

/** Prisma's codes for a database it cannot reach or use, and for a pool or transaction start that timed out. */
const PRISMA_UNREACHABLE = new Set(["P1001", "P1002", "P1008", "P1011", "P1017"]);
const PRISMA_OVERLOADED = new Set(["P2024", "P2028", "P2037"]);
/** Socket errors of a connection that could not be made or broke. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
/** Messages of the drivers (pg, PGlite and its thread, Prisma's adapters) when the database itself is gone or busy. */
const UNREACHABLE_MESSAGES = [
  /can't reach database server/i,
  /connection terminated/i,
  /connection (?:refused|reset)/i,
  /terminating connection/i,
  /server closed the connection/i,
  /client has encountered a connection error/i,
  /cannot use a pool after calling end/i,
  /pglite is closed/i,
  /the pglite thread (?:exited|is closed)/i,
  /database is unreachable/i,
];
const OVERLOADED_MESSAGES = [
  /unable to start a transaction in the given time/i,
  /timed out fetching a new connection/i,
  /timeout exceeded when trying to connect/i,
  /too many (?:clients|connections)/i,
];

function codeOf(err: object): string | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

export function databaseFailure(err: unknown, depth = 0): DatabaseFailureKind | null {
  if (!err || typeof err !== "object" || depth > 5) return null;
  const code = codeOf(err);
  const message = (err as { message?: unknown }).message;
  const text = typeof message === "string" ? message : "";
  if (code && PRISMA_OVERLOADED.has(code)) return "overloaded";
  if (code && (PRISMA_UNREACHABLE.has(code) || SOCKET_CODES.has(code))) return "unreachable";
  // SQLSTATE: class 08 connection exception, 53300 too many connections, 57P01-57P03 shutting down.
  if (code && /^08[0-9A-Z]{3}$/.test(code)) return "unreachable";
  if (code === "53300") return "overloaded";
  if (code && /^57P0[1-3]$/.test(code)) return "unreachable";
  if (OVERLOADED_MESSAGES.some((re) => re.test(text))) return "overloaded";
  if (UNREACHABLE_MESSAGES.some((re) => re.test(text))) return "unreachable";
  // Prisma's driver adapters carry the driver's error as cause, or under meta.
  const nested = [
    (err as { cause?: unknown }).cause,
    (err as { meta?: { driverAdapterError?: unknown } }).meta?.driverAdapterError,
    ...((err as { errors?: unknown }).errors instanceof Array ? (err as { errors: unknown[] }).errors : []),
  ];
  for (const inner of nested) {
    const kind = databaseFailure(inner, depth + 1);
    if (kind) return kind;
  }
  return null;
}

/** Enough to act on, nothing to leak. */
export function shortCause(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).trim().split("\n", 1)[0]!.slice(0, 200);
}

const state = processSingleton("database-failures", () => ({
  failingSince: null as number | null,
  lastError: "",
}));

export function noteDatabaseFailure(err: unknown): void {
  state.failingSince ??= Date.now();
  state.lastError = shortCause(err);
}

export function noteDatabaseSuccess(): void {
  if (state.failingSince !== null) state.failingSince = null;
}

export function databaseFailing(): { since: number; error: string } | null {
  return state.failingSince === null ? null : { since: state.failingSince, error: state.lastError };
}

export function databaseFailedTooLong(now = Date.now()): boolean {
  const limit = config().DATABASE_FAILURE_EXIT_SECONDS;
  return limit > 0 && state.failingSince !== null && now - state.failingSince > limit * 1000;
}

export function databaseUnavailableError(err: unknown, requestId?: string | null): ApiError | null {
  if (err instanceof ApiError) return null;
  const kind = databaseFailure(err);
  if (!kind) return null;
  noteDatabaseFailure(err);
  log().warn({ cause: shortCause(err), kind, request_id: requestId ?? undefined }, "database unavailable");
  const message =
    kind === "overloaded"
      ? "The service is overloaded and could not take this request in time. Retry after the time in Retry-After."
      : "The service cannot reach its database right now. Retry after the time in Retry-After.";
  return new ApiError("service_unavailable", message, { headers: { "Retry-After": String(DATABASE_RETRY_AFTER_SECONDS) } });
}
