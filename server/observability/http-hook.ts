import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { newId } from "../ids";
import { processSingleton } from "../singleton";
import { runWithRequestContext, type RequestContext } from "./context";
import { log } from "./log";
import { metrics } from "./metrics";

type Counter = ReturnType<ReturnType<typeof metrics>["httpRequests"]["labels"]>;
type Histogram = ReturnType<ReturnType<typeof metrics>["httpDuration"]["labels"]>;
import { routeTemplate } from "./routes";

// One place sees every HTTP request of the process, whichever server took it (`next start`,
// the standalone server.js, `npm start` and its fast routes, `next dev`): the `request` event
// of node:http servers, hooked as OpenTelemetry's HTTP instrumentation does. For each request
// it opens the request context (so the handlers' request_id is the log's), makes sure the
// answer carries that Request-Id, and when the response ends writes one log line and the
// request metrics. It also keeps count of open requests and of the servers, for shutdown.

const REQUEST_ID = "request-id";

interface HookState {
  installed: boolean;
  servers: Set<http.Server>;
  open: number;
  /** Resolved whenever `open` drops to 0. */
  idleWaiters: (() => void)[];
}

const state = processSingleton<HookState>("http-hook", () => ({ installed: false, servers: new Set(), open: 0, idleWaiters: [] }));

/** Adds our Request-Id to the response unless the handler set one (it sets the same one). */
function stampRequestId(res: ServerResponse, requestId: string): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
    if (!this.headersSent && !this.hasHeader(REQUEST_ID) && !headersArgHas(args, REQUEST_ID)) this.setHeader("Request-Id", requestId);
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

/** Whether writeHead's own headers argument (an object, or a flat [name, value, ...] array) names `header`. */
function headersArgHas(args: unknown[], header: string): boolean {
  const headers = args.find((a, i) => i > 0 && a !== null && typeof a === "object");
  if (!headers) return false;
  if (Array.isArray(headers)) return headers.some((v, i) => i % 2 === 0 && String(v).toLowerCase() === header);
  return Object.keys(headers).some((k) => k.toLowerCase() === header);
}

function onFinish(req: IncomingMessage, res: ServerResponse, context: RequestContext, started: bigint): void {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const pathname = (req.url ?? "/").split("?", 1)[0]!;
  const route = routeTemplate(pathname);
  const method = req.method ?? "GET";
  // Cut off before the answer was complete: 499, as proxies log it.
  const status = res.writableFinished ? res.statusCode : 499;
  const series = requestSeries(route, method, status);
  series.requests.inc();
  series.duration.observe(seconds);
  const header = res.getHeader(REQUEST_ID);
  const requestId = typeof header === "string" ? header : context.requestId;
  const record = {
    request_id: requestId,
    method,
    route,
    path: route === pathname ? undefined : pathname,
    status,
    duration_ms: Math.round(seconds * 10_000) / 10,
    account_id: context.accountId,
    key_id: context.keyId,
  };
  const logger = log();
  if (status >= 500) logger.error(record, "request");
  else logger.info(record, "request");
}

/** The request metrics' children by route, method and status, so a request does not hash its labels twice. */
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

/** Installs the hook once per process (startServer calls it). */
export function installHttpHook(): void {
  if (state.installed) return;
  state.installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event !== "request") return emit.apply(this, [event, ...args]);
    const [req, res] = args as [IncomingMessage, ServerResponse];
    state.servers.add(this);
    const context: RequestContext = { requestId: newId("request") };
    const started = process.hrtime.bigint();
    state.open++;
    stampRequestId(res, context.requestId);
    // 'close' comes once per response, after 'finish' when it was sent whole, alone when the
    // client went away first.
    res.once("close", () => {
      settle();
      try {
        onFinish(req, res, context, started);
      } catch {
        // Observability must never break a response.
      }
    });
    return runWithRequestContext(context, () => emit.apply(this, [event, ...args]));
  } as typeof http.Server.prototype.emit;
}

/** Requests under way in this process. */
export function openRequests(): number {
  return state.open;
}

/** Resolves when no request is open, or after `ms`. */
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

/** Stops every server that took a request from accepting connections; open ones finish. */
export function stopAccepting(): void {
  for (const server of state.servers) {
    server.close();
    server.closeIdleConnections?.();
  }
}
