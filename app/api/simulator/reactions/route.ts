// POST /api/simulator/reactions - the simulated other phone: a contact adds or removes a reaction
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorReactionBody } from "@/server/services/schemas/simulator-requests";
import { simulateReaction, simulatorEnabled } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorReactionBody }, ({ actor, body }) => simulateReaction(actor, body)) },
  { enabled: simulatorEnabled },
);
