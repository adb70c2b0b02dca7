import type { IncomingMessage, ServerResponse } from "node:http";
import { processSingleton } from "../../kernel/singleton";
import { ClientGone, jsonBodyLimit, readNodeBody } from "./body";
import { type Answer, answerInbound } from "./provider-webhook-answer";
import { clientGoneSignal, endWithUnreadBody, requestUrl, sendWebResponse, webHeaders, webRequest } from "./node-web";
import { envelopeHeaders, errorAnswer, requestIdOf } from "./responses";

// Routes npm start answers on Node's request and response before Next, whose routing, tracing and
// stream conversion cost more than a small request's work (docs/benchmarks.md): provider webhooks,
// and route files' handlers by exact path. startServer publishes the table from inside Next's
// bundle, so the start script shares the route files' module instances instead of a second copy.

type FastHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface FastRoutes {
  /** The handler for this request, or null to let Next answer it. */
  route(req: IncomingMessage): FastHandler | null;
}

const INBOUND = /^\/api\/inbound\/([^/?#]+)(?:\?|$)/;

function sendAnswer(req: IncomingMessage, res: ServerResponse, answer: Answer, requestId: string): void {
  const body = "text" in answer ? answer.text : JSON.stringify({ ...answer.body, request_id: requestId });
  const envelope = envelopeHeaders(requestId, answer.headers);
  if ("text" in answer) envelope["Content-Type"] = answer.contentType;
  endWithUnreadBody(req, res, answer.status, { ...envelope, "Content-Length": Buffer.byteLength(body) }, body);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes: no line has such an ID, so the token check refuses it
  }
}

function inbound(segment: string, target: string): FastHandler {
  return async (req, res) => {
    const requestId = requestIdOf(req.headers);
    let answer: Answer;
    try {
      const body = await readNodeBody(req, jsonBodyLimit(), "request_too_large");
      answer = await answerInbound(decodeSegment(segment), { url: new URL(target), headers: webHeaders(req), body }, requestId);
    } catch (err) {
      if (err instanceof ClientGone) return;
      answer = errorAnswer(err, requestId);
    }
    sendAnswer(req, res, answer, requestId);
  };
}

type WebHandler = (request: Request) => Promise<Response> | Response;
export type RouteModule = Partial<Record<(typeof WEB_METHODS)[number], WebHandler>>;

/** HEAD (Next derives it from GET) and other methods go to Next. */
const WEB_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

function web(handler: WebHandler, url: string): FastHandler {
  return async (req, res) => {
    const response = await handler(webRequest(req, url, clientGoneSignal(res)));
    await sendWebResponse(req, res, response);
  };
}

function route(api: ReadonlyMap<string, RouteModule>, req: IncomingMessage): FastHandler | null {
  const target = req.url;
  if (!target) return null;
  if (req.method === "POST") {
    const m = INBOUND.exec(target);
    const url = m && requestUrl(req);
    if (url) return inbound(m[1]!, url);
  }
  const query = target.indexOf("?");
  const module = api.get(query < 0 ? target : target.slice(0, query));
  const method = WEB_METHODS.find((m) => m === req.method);
  const handler = module && method ? module[method] : undefined;
  if (!handler) return null;
  const url = requestUrl(req);
  return url ? web(handler, url) : null;
}

/** Called once by startServer; `api`: route modules by exact path (v1-routes.ts, /api/mcp). */
export function registerFastRoutes(api: Readonly<Record<string, RouteModule>> = {}): FastRoutes {
  const table = processSingleton("fast-routes", () => {
    const paths = new Map<string, RouteModule>();
    return { paths, route: (req: IncomingMessage) => route(paths, req) };
  });
  for (const [path, module] of Object.entries(api)) table.paths.set(path, module);
  return table;
}
