// POST /api/simulator/reachability - whether a simulated contact can receive iMessage from the line
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorReachabilityBody } from "@/server/services/schemas/simulator-requests";
import { simulateReachability, simulatorEnabled } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorReachabilityBody }, ({ actor, body }) => simulateReachability(actor, body)) },
  { enabled: simulatorEnabled },
);
