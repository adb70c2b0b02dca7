import { liveness } from "@/server/observability/health";
import { operatorRequest } from "@/server/transports/ops/metrics-route";
import { isShuttingDown } from "@/server/kernel/shutdown";

// GET /healthz - liveness (docs/production.md): 503 only after DATABASE_FAILURE_EXIT_SECONDS of
// failing queries; a short outage is /readyz's business.
export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  const live = await liveness();
  const details = live.database && operatorRequest(request) ? { database: live.database } : {};
  const body = { status: live.ok ? "ok" : "failing", uptime_seconds: Math.round(process.uptime()), shutting_down: isShuttingDown(), ...details };
  return Response.json(body, { status: live.ok ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
