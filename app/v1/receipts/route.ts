// GET /v1/receipts - read receipts in one chat
import { apiRoute, routes } from "@/server/http/api-route";
import { ChatStateQuery } from "@/server/schemas/v1";
import { listReceipts } from "@/server/services/chat-state";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "receipts:read", query: ChatStateQuery }, ({ actor, query }) => listReceipts(actor, query)),
});
