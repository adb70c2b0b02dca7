// POST /v1/audio-messages - send an uploaded recording as a voice memo; answers a pending outbox item
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { SendAudioMessageBody, sendAudioMessage } from "@/server/services/messaging/send-audio";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "messages:write", body: SendAudioMessageBody }, ({ actor, body, requestId }) =>
    sendAudioMessage(actor, body, requestId),
  ),
});
