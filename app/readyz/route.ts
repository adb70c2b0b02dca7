import { readiness } from "@/server/observability/health";

// GET /readyz - readiness for a load balancer or orchestrator: 200 when this instance can take
// traffic, 503 (with what failed) when it cannot or is shutting down. No key needed; the body
// holds statuses and counts, never secrets.
export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  const result = await readiness();
  return Response.json(result, { status: result.status === "ready" ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
