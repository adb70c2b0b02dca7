import type { z } from "zod";
import { authenticate, requireScope } from "../../services/access/api-keys";
import { annotateRequest } from "../../observability/request-context";
import type { Operation, OperationContext } from "../../services/operation";
import { ApiError } from "../../kernel/errors";
import { cachedJson } from "./read-cache";
import { enforceRateLimit } from "./api-rate-limit";
import { type StoredBlob, discardBlob, storeBlob } from "../../storage/blobs";
import { bodyChunks } from "./body";
import { canonicalJson, type CurrentSecret, idempotent, parseIdempotencyKey, requestHash } from "../../services/access/idempotency";
import {
  CORS_HEADERS,
  errorResponse,
  jsonResponse,
  jsonTextResponse,
  requestIdOf,
  preflightResponse,
  routeNotFound,
} from "./responses";
import { jsonBody, queryObject } from "./validation";
import { parseWith } from "../../wire/parse";

// The /v1 wrapper (request_id, authentication, rate limit, scope, parsing, errors) of a handler.

export type RouteOptions<QS extends z.ZodType | undefined, BS extends z.ZodType | undefined> = Pick<
  Operation<QS, BS>,
  "scope" | "query" | "body" | "status" | "cache" | "upload" | "replaySecret" | "batch"
>;

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
type Handler<Q, B> = (ctx: OperationContext<Q, B>) => Promise<object | Response>;

function isResponse(value: object): value is Response {
  return value instanceof Response;
}

export function apiRoute<QS extends z.ZodType | undefined = undefined, BS extends z.ZodType | undefined = undefined>(
  options: RouteOptions<QS, BS>,
  handler: Handler<Out<QS>, Out<BS>>,
): (request: Request) => Promise<Response> {
  return async (request: Request) => {
    const requestId = requestIdOf(request.headers);
    let headers: Record<string, string> = {};
    let upload: StoredBlob | undefined;
    let uploadUsed = false;
    try {
      const actor = await authenticate(request.headers.get("authorization"));
      annotateRequest(requestId, actor);
      headers = await enforceRateLimit(actor);
      if (options.scope) requireScope(actor, options.scope);
      const query = (options.query ? parseWith(options.query, queryObject(new URL(request.url))) : undefined) as Out<QS>;
      options.upload?.check?.(request);
      upload = options.upload ? await storeBlob(bodyChunks(request, options.upload.maxBytes), options.upload.maxBytes) : undefined;
      const json = options.body ? await jsonBody(request) : undefined;
      const body = (options.body ? parseWith(options.body, json, { checkStrings: !options.batch }) : undefined) as Out<BS>;
      const run = async () => {
        const value = await handler({ actor, query, body, upload, requestId, request });
        uploadUsed = true;
        return value;
      };
      const idempotencyKey = request.method === "POST" ? parseIdempotencyKey(request.headers.get("idempotency-key")) : null;
      if (idempotencyKey) {
        const url = new URL(request.url);
        // An upload is identified by its headers and the hash of its bytes, known once stored.
        const payload = upload
          ? Buffer.from(`${request.headers.get("content-type")}\n${request.headers.get("x-filename")}\n${upload.sha256}`)
          : canonicalJson(json ?? {});
        const outcome = await idempotent(actor, idempotencyKey, requestHash("POST", url.pathname, payload), "POST", url.pathname, async () => {
          const value = await run();
          if (isResponse(value)) throw new Error("idempotent routes must return JSON objects");
          return { status: options.status ?? 200, body: value };
        }, options.replaySecret);
        return jsonResponse(outcome.status, outcome.body, requestId, { ...headers, "Idempotent-Replayed": String(outcome.replayed) });
      }
      if (options.cache) {
        const json = await cachedJson(actor, new URL(request.url), async () => {
          const value = await run();
          if (isResponse(value)) throw new Error("cached routes must return JSON objects");
          return value;
        });
        return jsonTextResponse(options.status ?? 200, json, requestId, headers);
      }
      const result = await run();
      if (isResponse(result)) {
        result.headers.set("Request-Id", requestId);
        for (const [k, v] of Object.entries({ ...CORS_HEADERS, ...headers })) result.headers.set(k, v);
        return result;
      }
      return jsonResponse(options.status ?? 200, result, requestId, headers);
    } catch (err) {
      return errorResponse(err, requestId, err instanceof ApiError && err.code === "rate_limit_exceeded" ? {} : headers);
    } finally {
      if (upload && !uploadUsed) await discardBlob(upload).catch(() => undefined);
    }
  };
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
export type RouteHandler = (request: Request) => Promise<Response> | Response;

// A JSON 404 (Stripe's "Unrecognized request URL") for a method the path lacks, not Next's empty
// 405; a path whose `enabled()` is false answers like an unknown one, before authentication.
export function routes(
  handlers: Partial<Record<Method, RouteHandler>>,
  options: { enabled?: () => boolean } = {},
): Record<Method | "OPTIONS", RouteHandler> {
  const { enabled } = options;
  const pick = (m: Method): RouteHandler => {
    const handler = handlers[m];
    if (!handler) return routeNotFound;
    return enabled ? (request) => (enabled() ? handler(request) : routeNotFound(request)) : handler;
  };
  return { GET: pick("GET"), POST: pick("POST"), PUT: pick("PUT"), PATCH: pick("PATCH"), DELETE: pick("DELETE"), OPTIONS: preflightResponse };
}
