import { initTRPC, TRPCError } from "@trpc/server";
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server/rpc";
import { ZodError } from "zod";
import { MAX_TRPC_BATCH } from "../../../lib/trpc-batch";
import type { Actor } from "../../services/access/actor";
import { databaseUnavailableError } from "../../db/database-failures";
import { ApiError, type ErrorCode } from "../../kernel/errors";
import { rejectUnsafeStrings } from "../../wire/parse";
import { log } from "../../kernel/log";

// tRPC for the dashboard; errors keep the REST code (data.code) and the request ID.

interface TrpcContext {
  actor: Actor | null;
  requestId: string;
  /** The caller's address when known (TRUST_PROXY), for sign-up's per-address limit. */
  clientIp?: string | null;
}

/** Calls one batched request may carry (each sign-up runs a password hash); the dashboard's link splits to fit. */
export const MAX_BATCH_SIZE = MAX_TRPC_BATCH;
const BATCH_TOO_LARGE = "Batch call exceeds maximum size";

const STATUS_TO_TRPC: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  429: "TOO_MANY_REQUESTS",
  503: "SERVICE_UNAVAILABLE",
};

function apiCode(error: TRPCError): { code: ErrorCode; param: string | null } {
  const cause = error.cause;
  if (cause instanceof ApiError) return { code: cause.code, param: cause.param ?? null };
  if (cause instanceof ZodError) return { code: "invalid_parameter_value", param: cause.issues[0]?.path.join(".") || null };
  if (error.code === "BAD_REQUEST" && error.message === BATCH_TOO_LARGE) return { code: "batch_too_large", param: null };
  if (error.code === "UNAUTHORIZED") return { code: "session_required", param: null };
  if (error.code === "NOT_FOUND") return { code: "route_not_found", param: null };
  if (error.code === "BAD_REQUEST" || error.code === "PARSE_ERROR") return { code: "invalid_json", param: null };
  return { code: "internal_error", param: null };
}

const t = initTRPC.context<TrpcContext>().create({
  errorFormatter({ shape, error, ctx }) {
    const { code, param } = apiCode(error);
    // Without a context (an error tRPC raised before creating it: an oversized batch, a body
    // that is not JSON), null here; handleTrpc fills in the request's ID.
    const requestId = ctx?.requestId ?? null;
    const masked = code === "internal_error";
    if (masked) log().error({ err: error.cause ?? error, request_id: requestId ?? undefined }, "trpc error");
    return {
      ...shape,
      // Unexpected errors say nothing of their cause on the wire.
      message: masked
        ? "Something went wrong on our side. Try again; if it persists, quote the request ID."
        : code === "batch_too_large"
          ? `A batch may carry at most ${MAX_BATCH_SIZE} calls; send the rest in another request.`
          : shape.message,
      data: { code, param, requestId, httpStatus: shape.data.httpStatus, path: shape.data.path },
    };
  },
});

const translateErrors = t.middleware(async ({ next }) => {
  const result = await next();
  const cause = result.ok ? null : result.error.cause instanceof ApiError ? result.error.cause : databaseUnavailableError(result.error.cause, null);
  if (cause) {
    throw new TRPCError({ code: STATUS_TO_TRPC[cause.status] ?? "INTERNAL_SERVER_ERROR", message: cause.message, cause });
  }
  return result;
});

/** The database cannot store NUL or lone surrogates: refused as in /v1, naming the field. */
const rejectUnsafeInput = t.middleware(async ({ getRawInput, next }) => {
  // Unparsable input is left to the input parser, after the session check (401 first).
  rejectUnsafeStrings(await getRawInput().catch(() => undefined));
  return next();
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure.use(translateErrors).use(rejectUnsafeInput);

export const protectedProcedure = publicProcedure.use(({ ctx, next }) => {
  if (!ctx.actor) throw new TRPCError({ code: "UNAUTHORIZED", message: "Sign in to continue." });
  return next({ ctx: { ...ctx, actor: ctx.actor } });
});
