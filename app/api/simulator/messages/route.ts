// POST /api/simulator/messages - the simulated other phone: an inbound message (text, attachment, voice memo, group, reply)
import { apiRoute, routes } from "@/server/http/api-route";
import { SimulatorMessageBody } from "@/server/schemas/simulator";
import { simulateMessage } from "@/server/services/simulator";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ body: SimulatorMessageBody, status: 201 }, ({ actor, body }) => simulateMessage(actor, body)),
});
