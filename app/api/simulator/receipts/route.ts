// POST /api/simulator/receipts - the simulated other phone: a contact reads the chat
import { apiRoute, routes } from "@/server/http/api-route";
import { SimulatorReceiptBody } from "@/server/schemas/simulator";
import { simulateReceipt } from "@/server/services/simulator";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ body: SimulatorReceiptBody }, ({ actor, body }) => simulateReceipt(actor, body)),
});
