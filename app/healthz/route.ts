import { isShuttingDown } from "@/server/shutdown";

// GET /healthz - liveness: the process is up and answering. It touches no dependency, so a
// database outage never gets a healthy instance restarted (that is /readyz's business).
export const dynamic = "force-dynamic";

export function GET(): Response {
  return Response.json({ status: "ok", uptime_seconds: Math.round(process.uptime()), shutting_down: isShuttingDown() }, { headers: { "Cache-Control": "no-store" } });
}
