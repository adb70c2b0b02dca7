// GET /v1/receipts - read receipts in one chat; POST /v1/receipts - mark the chat read
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ChatStateQuery } from "@/server/services/schemas/v1";
import { listReceipts } from "@/server/services/messaging/chat-state";
import { SendReceiptBody, sendReceipt } from "@/server/services/messaging/send";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "receipts:read", query: ChatStateQuery }, ({ actor, query }) => listReceipts(actor, query)),
  POST: apiRoute({ scope: "receipts:write", body: SendReceiptBody }, ({ actor, body, requestId }) => sendReceipt(actor, body, requestId)),
});
