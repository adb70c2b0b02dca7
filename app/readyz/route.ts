import { readiness } from "@/server/observability/health";
import { operatorRequest } from "@/server/transports/ops/metrics-route";

// GET /readyz - readiness for a load balancer or orchestrator: 200 when this instance can take
// traffic, 503 when it cannot or is shutting down. No key needed for the status; what was
// checked and what failed (statuses, counts, one-line causes, never secrets) only with
// `Authorization: Bearer <METRICS_TOKEN>`, or in development and test without a token set.
export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  const result = await readiness();
  const body = operatorRequest(request) ? result : { status: result.status };
  return Response.json(body, { status: result.status === "ready" ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
