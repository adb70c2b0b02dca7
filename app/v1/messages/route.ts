// GET /v1/messages - messages of a line or one chat, newest first; ?id= fetches one message
// POST /v1/messages - send text and/or one attachment; answers a pending outbox item
import { missingParam } from "@/server/kernel/errors";
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ListMessagesQuery } from "@/server/services/schemas/v1";
import { getMessage, listMessages } from "@/server/services/messaging/messages";
import { SendMessageBody, sendMessage } from "@/server/services/messaging/send";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "messages:read", query: ListMessagesQuery, cache: true }, async ({ actor, query }) => {
    if (query.id) return getMessage(actor, query.id);
    if (!query.from) throw missingParam("from");
    return listMessages(actor, { ...query, from: query.from });
  }),
  POST: apiRoute({ scope: "messages:write", body: SendMessageBody }, ({ actor, body, requestId }) =>
    sendMessage(actor, body, requestId),
  ),
});
