// POST /api/simulator/typing - the simulated other phone: a contact starts or stops typing
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorTypingBody } from "@/server/services/schemas/simulator-requests";
import { simulateTyping, simulatorEnabled } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorTypingBody }, ({ actor, body }) => simulateTyping(actor, body)) },
  { enabled: simulatorEnabled },
);
