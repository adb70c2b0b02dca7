// POST /api/simulator/reactions - the simulated other phone: a contact adds or removes a reaction
import { apiRoute, routes } from "@/server/http/api-route";
import { SimulatorReactionBody } from "@/server/schemas/simulator";
import { simulateReaction, simulatorEnabled } from "@/server/services/simulator";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorReactionBody }, ({ actor, body }) => simulateReaction(actor, body)) },
  { enabled: simulatorEnabled },
);
