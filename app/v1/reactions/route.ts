// GET /v1/reactions - reactions on one message (msg_ ID or GUID); POST /v1/reactions - react to a message
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ListReactionsQuery } from "@/server/services/schemas/v1";
import { listReactions } from "@/server/services/messaging/reactions";
import { SendReactionBody, sendReaction } from "@/server/services/messaging/send";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "reactions:read", query: ListReactionsQuery }, ({ actor, query }) => listReactions(actor, query)),
  POST: apiRoute({ scope: "reactions:write", body: SendReactionBody }, ({ actor, body, requestId }) => sendReaction(actor, body, requestId)),
});
