import { metricsResponse } from "@/server/transports/ops/metrics-route";

// GET /metrics - Prometheus text; open unless METRICS_TOKEN is set.
export const dynamic = "force-dynamic";

export const GET = (request: Request): Promise<Response> => metricsResponse(request);
