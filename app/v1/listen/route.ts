// GET /v1/listen - extension: this key's webhook events as server-sent events (the CLI's `listen`), resumable by ?session=
import { authenticate, requireScope } from "@/server/services/access/api-keys";
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { listenStream } from "@/server/transports/http/listen-stream";
import { ApiError } from "@/server/kernel/errors";
import { shutdownSignal } from "@/server/kernel/shutdown";
import { ListenQuery, openListenSession } from "@/server/services/webhooks/listen";
import { acquireStreamSlot } from "@/server/services/webhooks/stream-slots";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "webhooks:read", query: ListenQuery }, async ({ actor, query, request, requestId }) => {
    if (shutdownSignal().aborted) {
      // Connection: close, so the client's next attempt cannot reuse this socket and keep a
      // stopping server alive.
      throw new ApiError("server_shutting_down", "This server is stopping. Reconnect in a moment (with `session` to resume).", {
        headers: { "Retry-After": "1", Connection: "close" },
      });
    }
    const releaseSlot = acquireStreamSlot(actor);
    try {
      const session = await openListenSession(actor, query);
      const recheckKey = async () => requireScope(await authenticate(request.headers.get("authorization")), "webhooks:read");
      return listenStream(session, { accountId: actor.accountId, requestId, requestSignal: request.signal, recheckKey, onEnd: releaseSlot });
    } catch (err) {
      releaseSlot();
      throw err;
    }
  }),
});
