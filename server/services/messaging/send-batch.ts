import { z } from "zod";
import type { Actor } from "../access/actor";
import { databaseUnavailableError } from "../../db/database-failures";
import { ApiError } from "../../kernel/errors";
import { log } from "../../kernel/log";
import { errorEnvelope } from "../../wire/error-envelope";
import { parseWith } from "../../wire/parse";
import { SendMessageBody, sendMessage } from "./send";

const MAX_BATCH_MESSAGES = 1_000;
// Enough sends in flight for the outbox's insert batcher to merge them into a few statements;
// few enough that one batch leaves the pool to other requests.
const IN_FLIGHT = 32;

const documentedItem = z.toJSONSchema(SendMessageBody, { io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
delete documentedItem.$schema;

// Each message is checked on its own, so that one bad message is that message's error, not the batch's.
export const SendMessagesBody = z.object({
  messages: z
    .array(z.unknown().meta(documentedItem))
    .min(1, "must hold at least one message")
    .max(MAX_BATCH_MESSAGES, `must hold at most ${MAX_BATCH_MESSAGES} messages`)
    .describe(`Up to ${MAX_BATCH_MESSAGES.toLocaleString("en-US")} messages, each the body of POST /v1/messages`),
});

type Envelope = ReturnType<typeof errorEnvelope>;
type Sent = Awaited<ReturnType<typeof sendMessage>>;

function itemError(err: unknown, requestId: string): Envelope {
  const known = err instanceof ApiError ? err : databaseUnavailableError(err, requestId);
  if (known) return errorEnvelope(known, requestId);
  log().error({ err, request_id: requestId }, "unexpected error in a batch's message");
  return errorEnvelope(new ApiError("internal_error", `An unexpected error occurred. Quote request ${requestId} when reporting it.`), requestId);
}

/** In the order given: each message's outbox item, or the error the single form would have answered for it. */
export async function sendMessages(actor: Actor, messages: unknown[], requestId: string): Promise<{ object: "list"; data: (Sent | Envelope)[] }> {
  const data = new Array<Sent | Envelope>(messages.length);
  let next = 0;
  const worker = async () => {
    while (next < messages.length) {
      const i = next++;
      try {
        const message = messages[i];
        if (message === null || typeof message !== "object" || Array.isArray(message)) {
          throw new ApiError("invalid_json", "Each message must be a JSON object, as the body of POST /v1/messages.");
        }
        data[i] = await sendMessage(actor, parseWith(SendMessageBody, message), requestId);
      } catch (err) {
        data[i] = itemError(err, requestId);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, messages.length) }, worker));
  return { object: "list", data };
}
