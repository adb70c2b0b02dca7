import type { IncomingMessage, ServerResponse } from "node:http";
import { processSingleton } from "../singleton";
import { ClientGone, jsonBodyLimit, readNodeBody } from "./body";
import { type Answer, answerInbound } from "./inbound";
import { envelopeHeaders, errorAnswer, requestIdOf } from "./responses";

// Routes the production server (scripts/start.mjs) answers on Node's own request and response,
// before Next's request handling: provider webhooks arrive at a rate no person's request does
// (a busy line's Mac or phone, a backlog replayed after a restart), and for a small JSON body
// Next's routing, tracing and web-stream conversion cost several times what taking the event
// in does. Each route here answers exactly as its Next route file does (same service call,
// envelope, headers and errors); anything not matched goes to Next. `next dev` and the tests
// use the route files, so a route here must keep its route file.
//
// The table is published on globalThis by startServer (instrumentation), inside Next's bundle,
// so the start script reaches the same module instances (database, batchers, runners) that the
// route files use, instead of loading a second copy of them.

export type FastHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface FastRoutes {
  /** The handler for this request, or null to let Next answer it. */
  route(req: IncomingMessage): FastHandler | null;
}

const INBOUND = /^\/api\/inbound\/([^/?#]+)(?:\?|$)/;

function sendAnswer(res: ServerResponse, answer: Answer, requestId: string, close: boolean): void {
  const body = "text" in answer ? answer.text : JSON.stringify({ ...answer.body, request_id: requestId });
  const envelope = envelopeHeaders(requestId, answer.headers);
  if ("text" in answer) envelope["Content-Type"] = answer.contentType;
  const headers: Record<string, string | number> = { ...envelope, "Content-Length": Buffer.byteLength(body) };
  // A body refused before it was read whole: the rest is not read, so the connection ends with the answer.
  if (close) headers.Connection = "close";
  res.writeHead(answer.status, headers).end(body);
}

/** The request's headers as web Headers (what providers' verify functions read); a value Headers refuses is left out. */
function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    try {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    } catch {
      // not a ByteString: no provider signs with such a header
    }
  }
  return headers;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes: no line has such an ID, so the token check refuses it
  }
}

function inbound(segment: string): FastHandler {
  return async (req, res) => {
    const requestId = requestIdOf(req.headers);
    let answer: Answer;
    let close = false;
    try {
      const body = await readNodeBody(req, jsonBodyLimit(), "request_too_large");
      const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
      answer = await answerInbound(decodeSegment(segment), { url, headers: webHeaders(req), body }, requestId);
    } catch (err) {
      if (err instanceof ClientGone) return;
      answer = errorAnswer(err, requestId);
      close = true;
    }
    sendAnswer(res, answer, requestId, close);
  };
}

function route(req: IncomingMessage): FastHandler | null {
  if (req.method !== "POST" || !req.url) return null;
  const m = INBOUND.exec(req.url);
  return m ? inbound(m[1]!) : null;
}

/** Publishes the table for the start script (called once by startServer). */
export function registerFastRoutes(): FastRoutes {
  return processSingleton<FastRoutes>("fast-routes", () => ({ route }));
}
