import type { z } from "zod";
import { ApiError } from "../../kernel/errors";
import { subscribeLive } from "../../events/live";
import type { Actor } from "../access/actor";
import { authenticate, requireScope } from "../access/api-keys";
import { claimSessionDeliveries, closeListenSession, type ListenQuery, type ListenSession, markStreamed, openListenSession, touchListenSession } from "./listen";
import { acquireStreamSlot } from "./stream-slots";
import { shutdownSignal, untilShutdown } from "../../kernel/shutdown";
import { fileUrlSigner } from "../../storage/signed-urls";
import { renderBody } from "../../webhooks/delivery";
import { errorEnvelope } from "../../wire/error-envelope";
import { log } from "../../kernel/log";

const SHUTDOWN_RETRY_MS = 500;

// The key is checked again on every turn of the loop, before anything is claimed (authentication's cache reloads it
// every API_KEY_CACHE_SECONDS); a comment line every 15 s keeps proxies from closing an idle stream.

const POLL_MS = 500;
const KEEPALIVE_MS = 15_000;
const TOUCH_MS = 60_000;

interface ListenStreamOptions {
  accountId: string;
  requestId: string;
  requestSignal: AbortSignal;
  recheckKey: () => Promise<void>;
  onEnd: () => void;
}

function listenStream(session: ListenSession, { accountId, requestId, requestSignal, recheckKey, onEnd }: ListenStreamOptions): Response {
  const { signal, release } = untilShutdown(requestSignal);
  const encoder = new TextEncoder();
  let cancelled = false;
  let wake: (() => void) | null = null;
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      // New messages and outbox changes of this account wake the loop at once; reactions are
      // picked up by the poll.
      const unsubscribe = subscribeLive((event) => {
        if (event.accountId === accountId) wake?.();
      });
      const onAbort = () => wake?.();
      signal.addEventListener("abort", onAbort);
      send(`retry: 2000\nevent: session\ndata: ${JSON.stringify({ session: session.id, lines: session.lines, events: session.events })}\n\n`);
      let lastSend = Date.now();
      let lastTouch = Date.now();
      const keyStillValid = async () => {
        try {
          await recheckKey();
          return true;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          send(`event: error\ndata: ${JSON.stringify(errorEnvelope(err, requestId))}\n\n`);
          return false;
        }
      };
      try {
        while (!signal.aborted && !cancelled) {
          // Before anything is claimed, so a revoked key's deliveries stay for another client.
          if (!(await keyStillValid())) break;
          const batch = await claimSessionDeliveries(session);
          if (batch.length) {
            const url = await fileUrlSigner();
            for (const d of batch) send(`id: ${d.id}\nevent: ${d.event}\ndata: ${renderBody(d, url, Date.now())}\n\n`);
            await markStreamed(batch.map((d) => d.id));
            lastSend = Date.now();
            continue;
          }
          if (Date.now() - lastSend > KEEPALIVE_MS) {
            send(": keepalive\n\n");
            lastSend = Date.now();
          }
          if (Date.now() - lastTouch > TOUCH_MS) {
            await touchListenSession(session);
            lastTouch = Date.now();
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, POLL_MS);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = null;
        }
      } catch (err) {
        // The client went away mid-write, or the database failed: claimed deliveries return to
        // pending when their lease runs out and reach the client when it resumes.
        if (!cancelled && !signal.aborted) log().error({ err }, "stream ended");
      } finally {
        unsubscribe();
        signal.removeEventListener("abort", onAbort);
        release();
        onEnd();
          // A client that left stops hearing events at once; a stream the server ended keeps them for the resume.
        const serverEnded = shutdownSignal().aborted;
        await (serverEnded ? touchListenSession(session) : closeListenSession(session)).catch((err: unknown) => log().warn({ err }, "could not close a listen session"));
        try {
          // The instance is stopping: reconnect soon (to another instance) and resume the session.
          if (!cancelled && shutdownSignal().aborted) send(`retry: ${SHUTDOWN_RETRY_MS}\n: server shutting down; reconnect to resume\n\n`);
          controller.close();
        } catch {
          // already closed by the client
        }
      }
    },
    cancel() {
      cancelled = true;
      wake?.();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no" },
  });
}

export async function openListenStream(actor: Actor, query: z.output<typeof ListenQuery>, request: Request, requestId: string): Promise<Response> {
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
}
