// POST /api/simulator/messages - the simulated other phone: an inbound message (text, attachment, voice memo, group, reply)
// GET /api/simulator/messages?line=&contact= - what the simulated phones received from the line, newest first
import { apiRoute, routes } from "@/server/http/api-route";
import { SimulatorInboxQuery, SimulatorMessageBody } from "@/server/schemas/simulator";
import { listMessages } from "@/server/services/messages";
import { simulateMessage } from "@/server/services/simulator";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ query: SimulatorInboxQuery }, ({ actor, query }) =>
    listMessages(actor, { from: query.line, to: query.contact, limit: query.limit, cursor: query.cursor, fromMe: true }),
  ),
  POST: apiRoute({ body: SimulatorMessageBody, status: 201 }, ({ actor, body }) => simulateMessage(actor, body)),
});
