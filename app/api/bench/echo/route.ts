// GET|POST /api/bench/echo?name= - the trivial route handler npm run bench compares /v1 with:
// it answers a stored copy of the envelope a /v1 route answered, and does nothing else.
// PUT stores one. Off (the JSON route_not_found) unless BENCH_ECHO=true.
import { config } from "@/server/kernel/config";
import { routeNotFound } from "@/server/transports/http/responses";

// The stored text is answered as is: the cheapest way to send the same bytes, so the ratio
// charges every cost of a /v1 route (authentication, parsing, database, serialization) to it.
const envelopes = new Map<string, { status: number; text: string }>();

export async function PUT(request: Request): Promise<Response> {
  if (!config().BENCH_ECHO) return routeNotFound(request);
  const url = new URL(request.url);
  envelopes.set(url.searchParams.get("name") ?? "", {
    status: Number(url.searchParams.get("status") ?? 200),
    text: await request.text(),
  });
  return new Response(null, { status: 204 });
}

function answer(request: Request): Response {
  if (!config().BENCH_ECHO) return routeNotFound(request);
  const stored = envelopes.get(new URL(request.url).searchParams.get("name") ?? "");
  if (!stored) return routeNotFound(request);
  return new Response(stored.text, { status: stored.status, headers: { "Content-Type": "application/json; charset=utf-8" } });
}

export async function GET(request: Request): Promise<Response> {
  return answer(request);
}

export async function POST(request: Request): Promise<Response> {
  // Off, the body is not read: the route must cost nothing where the bench does not run.
  if (!config().BENCH_ECHO) return routeNotFound(request);
  await request.text(); // a real write handler reads its body; so does the trivial one
  return answer(request);
}
