import { OPERATION_LIST } from "../../services/operations";
import { apiRoute, type Method, type RouteHandler, routes } from "./api-route";
import type { RouteModule } from "./fast-routes";

// Every /v1 operation's handler by exact path, for app/v1/[[...path]]/route.ts and fast-routes.ts.

type PathRoutes = ReturnType<typeof routes>;

const byPath = new Map<string, Partial<Record<Method, RouteHandler>>>();
for (const op of OPERATION_LIST) {
  const handlers = byPath.get(op.path) ?? {};
  handlers[op.method] = apiRoute(op, (ctx) => op.handler(ctx));
  byPath.set(op.path, handlers);
}
const V1_ROUTES = new Map<string, PathRoutes>([...byPath].map(([path, handlers]) => [path, routes(handlers)]));
const UNKNOWN = routes({});

const dispatch = (method: Method | "OPTIONS"): RouteHandler => (request) =>
  (V1_ROUTES.get(new URL(request.url).pathname) ?? UNKNOWN)[method](request);

/** An unknown path is a JSON 404. */
export const V1_HANDLERS = {
  GET: dispatch("GET"),
  POST: dispatch("POST"),
  PUT: dispatch("PUT"),
  PATCH: dispatch("PATCH"),
  DELETE: dispatch("DELETE"),
  OPTIONS: dispatch("OPTIONS"),
};

/** All but those whose body streams (an upload, the event stream): those go through Next. */
export function fastRouteTable(): Record<string, RouteModule> {
  const paths = new Set(OPERATION_LIST.filter((op) => op.upload || op.stream).map((op) => op.path));
  const table: Record<string, RouteModule> = {};
  for (const [path, module] of V1_ROUTES) if (!paths.has(path)) table[path] = module;
  return table;
}
