import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { answerClientError, errorPayload, unroutedMethod } from "../http/methods";
import { newId } from "../../kernel/ids";
import { processSingleton } from "../../kernel/singleton";
import { closeRequest, openRequest, REQUEST_ID_HEADER, type RequestContext } from "../../observability/request-context";
import { logRequest } from "../../kernel/log";
import { metrics } from "../../observability/metrics";
import { routeTemplate } from "./routes";

type Counter = ReturnType<ReturnType<typeof metrics>["httpRequests"]["labels"]>;
type Histogram = ReturnType<ReturnType<typeof metrics>["httpDuration"]["labels"]>;

// The `request` event of every node:http server, whichever took it (next start/dev, server.js,
// npm start), hooked as OpenTelemetry's instrumentation does: request context, Request-Id, one log
// line and the metrics, open requests and servers for shutdown. Per request, so it allocates little.

interface HookState {
  installed: boolean;
  /** False only while npm run bench has switched the hook off (BENCH_OBSERVABILITY_SWITCH). */
  enabled: boolean;
  servers: Set<http.Server>;
  open: number;
  idleWaiters: (() => void)[];
}

const state = processSingleton<HookState>("http-hook", () => ({ installed: false, enabled: true, servers: new Set(), open: 0, idleWaiters: [] }));

function onFinish(req: IncomingMessage, res: ServerResponse, context: RequestContext, started: number): void {
  const seconds = (performance.now() - started) / 1000;
  const url = req.url ?? "/";
  const query = url.indexOf("?");
  const pathname = query === -1 ? url : url.slice(0, query);
  const route = routeTemplate(pathname);
  const method = req.method ?? "GET";
  // Cut off before the answer was complete: 499, as proxies log it.
  const status = res.writableFinished ? res.statusCode : 499;
  const series = requestSeries(route, method, status);
  series.requests.inc();
  series.duration.observe(seconds);
  const header = res.getHeader("request-id");
  logRequest({
    request_id: typeof header === "string" ? header : context.requestId,
    method,
    route,
    path: route === pathname ? undefined : pathname,
    status,
    duration_ms: Math.round(seconds * 10_000) / 10,
    account_id: context.accountId,
    key_id: context.keyId,
  });
}

const seriesCache = new Map<string, { requests: Counter; duration: Histogram }>();

function requestSeries(route: string, method: string, status: number) {
  const key = `${route} ${method} ${status}`;
  let series = seriesCache.get(key);
  if (!series) {
    const m = metrics();
    const labels = { route, method, status: String(status) };
    series = { requests: m.httpRequests.labels(labels), duration: m.httpDuration.labels(labels) };
    seriesCache.set(key, series);
  }
  return series;
}

function settle(): void {
  state.open--;
  if (state.open === 0) for (const resolve of state.idleWaiters.splice(0)) resolve();
}

export function installHttpHook(): void {
  if (state.installed) return;
  state.installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, req?: unknown, res?: unknown) {
    // `arguments`, not a rest array: this runs for every event of every server.
    if (event !== "request" || !state.enabled) {
      // A request Node's parser refused, where no listener of the server's own answers it.
      if (event === "clientError" && this.listenerCount("clientError") === 0) {
        answerClientError(req as Error, res as Socket);
        return true;
      }
      return emit.apply(this, arguments as unknown as [string, ...unknown[]]);
    }
    const request = req as IncomingMessage;
    const response = res as ServerResponse;
    state.servers.add(this);
    const context: RequestContext = { requestId: newId("request"), clientAddress: request.socket.remoteAddress };
    const started = performance.now();
    // Whatever a client sent under this name is replaced: handlers believe only this value.
    request.headers[REQUEST_ID_HEADER] = context.requestId;
    response.setHeader("Request-Id", context.requestId);
    openRequest(context);
    state.open++;
    // 'close' comes once per response, after 'finish' or alone when the client went away first.
    response.once("close", () => {
      closeRequest(context.requestId);
      settle();
      try {
        onFinish(request, response, context, started);
      } catch {} // observability must never break a response
    });
    const refused = unroutedMethod(request.method, request.url);
    if (refused) {
      const { body, headers } = errorPayload(refused, context.requestId);
      response.writeHead(refused.status, { ...headers, "Content-Length": Buffer.byteLength(body) }).end(body);
      return true;
    }
    return emit.apply(this, arguments as unknown as [string, ...unknown[]]);
  } as typeof http.Server.prototype.emit;
}

/** Bench only (BENCH_OBSERVABILITY_SWITCH): each SIGUSR2 switches the hook off or back on. */
export function switchObservabilityOnSignal(): void {
  process.on("SIGUSR2", () => {
    state.enabled = !state.enabled;
  });
}

export function openRequests(): number {
  return state.open;
}

export function requestsSettled(ms: number): Promise<void> {
  if (state.open === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    state.idleWaiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export function stopAccepting(): void {
  for (const server of state.servers) {
    server.close();
    server.closeIdleConnections?.();
  }
}
