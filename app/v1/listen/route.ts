// GET /v1/listen - extension: this key's webhook events as server-sent events (the CLI's `listen`), resumable by ?session=
import { apiRoute, routes } from "@/server/http/api-route";
import { listenStream } from "@/server/http/listen-stream";
import { ListenQuery, openListenSession } from "@/server/services/listen";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "webhooks:read", query: ListenQuery }, async ({ actor, query, request }) =>
    listenStream(await openListenSession(actor, query), actor.accountId, request.signal),
  ),
});
