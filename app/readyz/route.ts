import { readiness } from "@/server/observability/health";
import { operatorRequest } from "@/server/transports/ops/metrics-route";

// GET /readyz - readiness (docs/production.md): the details only for the METRICS_TOKEN holder.
export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  const result = await readiness();
  const body = operatorRequest(request) ? result : { status: result.status };
  return Response.json(body, { status: result.status === "ready" ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
