import { liveness } from "@/server/observability/health";
import { operatorRequest } from "@/server/transports/ops/metrics-route";
import { isShuttingDown } from "@/server/kernel/shutdown";

// GET /healthz - liveness: the process is up and answering. It touches no dependency while
// the database answers; only after DATABASE_FAILURE_EXIT_SECONDS of nothing but failing
// queries does it answer 503, so an orchestrator restarts the process (a short outage is
// /readyz's business). The failure's cause is shown as /readyz's details are: only with
// `Authorization: Bearer <METRICS_TOKEN>`, or in development and test without a token set.
export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  const live = await liveness();
  const details = live.database && operatorRequest(request) ? { database: live.database } : {};
  const body = { status: live.ok ? "ok" : "failing", uptime_seconds: Math.round(process.uptime()), shutting_down: isShuttingDown(), ...details };
  return Response.json(body, { status: live.ok ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
