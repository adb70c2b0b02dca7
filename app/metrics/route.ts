import { metricsResponse } from "@/server/transports/ops/metrics-route";

// GET /metrics - Prometheus text format. Open unless METRICS_TOKEN is set (then it needs
// `Authorization: Bearer <METRICS_TOKEN>`): without a token, keep it behind the proxy.
export const dynamic = "force-dynamic";

export const GET = (request: Request): Promise<Response> => metricsResponse(request);
