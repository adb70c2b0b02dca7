import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { trimTrailingSlashes } from "../../kernel/strings";
import { OPERATION_LIST } from "../../services/operations";

// "/api/files/[id]", not one metrics series per ID: the build's routes manifest, or under next dev
// (routes built on demand) ID-like segments folded. A path no route matches is "unmatched", so
// scanners probing random URLs cannot grow the metrics without bound.

const ManifestSchema = z.object({
  staticRoutes: z.array(z.object({ page: z.string() })).default([]),
  dynamicRoutes: z.array(z.object({ page: z.string(), regex: z.string() })).default([]),
});

interface Table {
  exact: Set<string>;
  dynamic: { page: string; re: RegExp }[];
}

/** The build's table; null without a manifest (next dev); undefined until first read (once per process). */
let table: Table | null | undefined;

function loadTable(): Table | null {
  try {
    const raw = JSON.parse(readFileSync(path.join(process.cwd(), ".next", "routes-manifest.json"), "utf8")) as unknown;
    const manifest = ManifestSchema.parse(raw);
    if (!manifest.staticRoutes.length && !manifest.dynamicRoutes.length) return null;
    return {
      exact: new Set(manifest.staticRoutes.map((r) => r.page)),
      dynamic: manifest.dynamicRoutes.map((r) => ({ page: r.page, re: new RegExp(r.regex) })),
    };
  } catch {
    return null;
  }
}

/** Every /v1 operation is answered by one catch-all route: its declared path is its template. */
const OPERATION_PATHS = new Set(OPERATION_LIST.map((op) => op.path));

const ID_SEGMENT = /^(?:[a-z]{2,6}_[A-Za-z0-9]{6,}|\+?\d[\d-]{4,}|[0-9a-f-]{16,}|[A-Za-z0-9_-]{32,})$/;

function folded(pathname: string): string {
  if (pathname.startsWith("/_next/")) return "/_next/[...]";
  return pathname
    .split("/")
    .map((s) => (ID_SEGMENT.test(s) ? "[id]" : s))
    .join("/");
}

/** Longer paths are no route's (none of ours is near it): "unmatched", before any regexp sees them. */
const MAX_ROUTE_PATH = 2048;

export function routeTemplate(pathname: string, tableOverride?: Table | null): string {
  if (pathname.length > MAX_ROUTE_PATH) return "unmatched";
  if (table === undefined) table = loadTable();
  const t = tableOverride !== undefined ? tableOverride : table;
  const clean = trimTrailingSlashes(pathname, 1); // "/" stays "/"
  if (OPERATION_PATHS.has(clean)) return clean;
  if (!t) return folded(clean);
  if (clean.startsWith("/_next/")) return "/_next/[...]";
  if (t.exact.has(clean)) return clean;
  for (const route of t.dynamic) if (route.re.test(clean)) return route.page;
  return "unmatched";
}

export function tableOf(staticPages: string[], dynamic: { page: string; regex: string }[]): Table {
  return { exact: new Set(staticPages), dynamic: dynamic.map((r) => ({ page: r.page, re: new RegExp(r.regex) })) };
}
