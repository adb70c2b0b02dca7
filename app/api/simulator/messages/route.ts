// POST /api/simulator/messages - the simulated other phone: an inbound message (text, attachment, voice memo, group, reply)
// GET /api/simulator/messages?line=&contact= - what the simulated phones received from the line, newest first
// Both answer route_not_found while SIMULATOR_ENABLED is off.
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorInboxQuery, SimulatorMessageBody } from "@/server/services/schemas/simulator-requests";
import { simulateMessage, simulatorEnabled, simulatorInbox } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  {
    GET: apiRoute({ scope: "messages:read", query: SimulatorInboxQuery }, ({ actor, query }) => simulatorInbox(actor, query)),
    POST: apiRoute({ scope: "messages:write", body: SimulatorMessageBody, status: 201 }, ({ actor, body }) => simulateMessage(actor, body)),
  },
  { enabled: simulatorEnabled },
);
