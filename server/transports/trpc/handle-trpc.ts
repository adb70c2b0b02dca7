import { TRPCError } from "@trpc/server";
import { resolveResponse } from "@trpc/server/http";
import type { Actor } from "../../services/access/actor";
import { sessionActor } from "../../services/access/session";
import { ApiError } from "../../kernel/errors";
import { jsonBodyLimit, readBody } from "../http/body";
import { clientIp } from "../http/client-ip";
import { requestIdOf } from "../http/responses";
import { jsonTooDeep, MAX_JSON_DEPTH } from "../http/validation";
import { annotateRequest } from "../../observability/request-context";
import { MAX_BATCH_SIZE } from "./init";
import { appRouter } from "./router";

const ENDPOINT = "/api/trpc";

/** The request with its body read under /v1's size and depth limits: tRPC itself would buffer any body. */
async function checkedRequest(req: Request): Promise<Request> {
  if (req.method === "GET" || !req.body) {
    const input = new URL(req.url).searchParams.get("input");
    if (input && jsonTooDeep(input)) throw tooDeep();
    return req;
  }
  const body = await readBody(req, jsonBodyLimit(), "request_too_large");
  if (jsonTooDeep(new TextDecoder().decode(body))) throw tooDeep();
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
}

const tooDeep = () => new ApiError("invalid_json", `The input nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);

/** The procedure path: what follows the endpoint, without surrounding slashes (no regexp: linear). */
function procedurePath(pathname: string): string {
  let start = ENDPOINT.length;
  let end = pathname.length;
  while (start < end && pathname[start] === "/") start++;
  while (end > start && pathname[end - 1] === "/") end--;
  return pathname.slice(start, end);
}

export async function handleTrpc(req: Request, resolveActor: () => Promise<Actor | null> = sessionActor): Promise<Response> {
  const requestId = requestIdOf(req.headers);
  let request = req;
  // A refused body becomes the error of every call in the request, in tRPC's own shape.
  let error: TRPCError | null = null;
  try {
    request = await checkedRequest(req);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    error = new TRPCError({ code: err.status === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST", message: err.message, cause: err });
    request = new Request(req.url, { method: req.method, headers: req.headers });
  }
  let contextMade = false;
  const response = await resolveResponse({
    router: appRouter,
    req: request,
    path: procedurePath(new URL(request.url).pathname),
    error,
    maxBatchSize: MAX_BATCH_SIZE,
    createContext: async () => {
      const actor = await resolveActor();
      if (actor) annotateRequest(requestId, actor);
      contextMade = true;
      return { actor, requestId, clientIp: clientIp(req.headers) };
    },
    responseMeta({ errors }) {
      // A 429's Retry-After (and any other header an ApiError carries) reaches the browser.
      const headers: Record<string, string> = { "Request-Id": requestId };
      for (const e of errors) if (e.cause instanceof ApiError) Object.assign(headers, e.cause.headers);
      return { headers };
    },
  });
  return contextMade ? response : withRequestId(response, requestId);
}

/**
 * An error tRPC built without our context carries `"requestId":null` (init.ts): the request's ID
 * goes in. That text can only be the formatter's own key, as JSON escapes quotes in messages.
 */
async function withRequestId(response: Response, requestId: string): Promise<Response> {
  if (response.status < 400 || !response.body) return response;
  const text = (await response.text()).replaceAll('"requestId":null', `"requestId":${JSON.stringify(requestId)}`);
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
}
