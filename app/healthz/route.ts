import { liveness } from "@/server/observability/health";
import { isShuttingDown } from "@/server/shutdown";

// GET /healthz - liveness: the process is up and answering. It touches no dependency while
// the database answers; only after DATABASE_FAILURE_EXIT_SECONDS of nothing but failing
// queries does it answer 503, so an orchestrator restarts the process (a short outage is
// /readyz's business).
export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  const live = await liveness();
  const body = { status: live.ok ? "ok" : "failing", uptime_seconds: Math.round(process.uptime()), shutting_down: isShuttingDown(), ...(live.database ? { database: live.database } : {}) };
  return Response.json(body, { status: live.ok ? 200 : 503, headers: { "Cache-Control": "no-store" } });
}
