// POST /api/simulator/receipts - the simulated other phone: a contact reads the chat
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SimulatorReceiptBody } from "@/server/services/schemas/simulator-requests";
import { simulateReceipt, simulatorEnabled } from "@/server/services/inbound/simulated-phone";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(
  { POST: apiRoute({ scope: "messages:write", body: SimulatorReceiptBody }, ({ actor, body }) => simulateReceipt(actor, body)) },
  { enabled: simulatorEnabled },
);
