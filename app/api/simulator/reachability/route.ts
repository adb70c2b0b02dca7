// POST /api/simulator/reachability - the simulated other phone: whether a contact can receive
// iMessage from the line (false: iMessage sends to them are refused, as a real Mac refuses them)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorReachabilityBody } from "@/server/services/schemas/simulator-requests";
import { simulateReachability, simulatorEnabled } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorReachabilityBody }, ({ actor, body }) => simulateReachability(actor, body)) },
  { enabled: simulatorEnabled },
);
