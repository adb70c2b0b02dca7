// POST /api/simulator/typing - the simulated other phone: a contact starts or stops typing
import { apiRoute, routes } from "@/server/http/api-route";
import { SimulatorTypingBody } from "@/server/schemas/simulator";
import { simulateTyping, simulatorEnabled } from "@/server/services/simulator";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorTypingBody }, ({ actor, body }) => simulateTyping(actor, body)) },
  { enabled: simulatorEnabled },
);
