import type { z } from "zod";
import { setSimulatedReachability } from "../../platform/simulated/platform";
import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { MAX_INBOUND_ATTACHMENT_BYTES } from "../../platform/inbound-event";
import { findProvider } from "../../platform/registry";
import type {
  SimulatorInboxQuery,
  SimulatorMessageBody,
  SimulatorReactionBody,
  SimulatorReachabilityBody,
  SimulatorReceiptBody,
  SimulatorTypingBody,
} from "../schemas/simulator-requests";
import { serializeMessage, serializeReaction, serializeReceipt, serializeTyping } from "../../wire/serializers";
import { fileUrlSigner } from "../../storage/signed-urls";
import { bridgeMessage, bridgeReaction, bridgeReceipt, bridgeTyping } from "./bridge-events";
import { assertLineAccess } from "../lines/lines";
import { listMessages } from "../messaging/messages";
import { normalizeActivationCode } from "../lines/sandbox";
import { requireSandboxOwner } from "../lines/sandbox-state";

// Who may drive the simulated other phone: docs/api.md, "The simulated platform".

export const simulatorEnabled = (): boolean => config().simulatorEnabled;

function requireSimulator(): void {
  if (!simulatorEnabled()) {
    throw new ApiError("route_not_found", "The simulator is off on this server (SIMULATOR_ENABLED).");
  }
}

export function simulatorStatus() {
  return { object: "simulator_status" as const, enabled: simulatorEnabled() };
}

async function simulatedLine(actor: Actor, handle: string, from: string, text?: string | null): Promise<Line> {
  requireSimulator();
  const db = await getDb();
  const line = handle.startsWith("ln_")
    ? await db.line.findUnique({ where: { id: handle } })
    : await db.line.findUnique({ where: { handle: normalizeHandle(handle) } });
  if (!line || (!line.isSandbox && line.accountId !== actor.accountId)) {
    throw new ApiError("line_not_found", `No line with handle '${handle}'.`, { param: "line" });
  }
  if (!findProvider(line.provider)?.simulator) throw invalidParam("line", "This line is not on the simulated platform.");
  if (!line.isSandbox) await assertLineAccess(actor, line);
  if (line.isSandbox) {
    requireSandboxOwner(actor);
    const state = await db.sandboxState.findUnique({ where: { accountId: actor.accountId } });
    const isOwnCode = !!text && !!state && normalizeActivationCode(text) === state.activationCode;
    const isOwnPhone = !!state && state.status === "active" && state.contactIdentifier === normalizeHandle(from);
    if (isOwnCode) {
      // A real phone proves possession by texting the code; a simulated one proves nothing.
      const holder = await db.sandboxState.findUnique({ where: { contactIdentifier: normalizeHandle(from) } });
      if (holder && holder.accountId !== actor.accountId) {
        throw new ApiError("sandbox_contact_mismatch", "This phone is paired with another account's sandbox; text your code from another number.", {
          param: "from",
        });
      }
    }
    if (!isOwnCode && !isOwnPhone) {
      if (!state || state.status !== "active") {
        throw new ApiError(
          "sandbox_not_activated",
          "The sandbox is not activated: text your account's activation code (POST /v1/sandbox) to the sandbox line first.",
        );
      }
      throw new ApiError("sandbox_contact_mismatch", `Only the paired phone ${state.contactIdentifier} can text this account's sandbox.`, {
        param: "from",
      });
    }
  }
  return line;
}

function decodeBase64(value: string): Buffer {
  const bytes = Buffer.from(value.replace(/\s/g, ""), value.includes("-") || value.includes("_") ? "base64url" : "base64");
  if (bytes.byteLength === 0) throw invalidParam("attachment.content_base64", "The attachment is empty.");
  if (bytes.byteLength > MAX_INBOUND_ATTACHMENT_BYTES) {
    throw invalidParam("attachment.content_base64", `The attachment exceeds ${MAX_INBOUND_ATTACHMENT_BYTES} bytes.`);
  }
  return bytes;
}

export async function simulateMessage(actor: Actor, input: z.output<typeof SimulatorMessageBody>) {
  const line = await simulatedLine(actor, input.line, input.from, input.text);
  const { message } = await bridgeMessage(line, {
    sender: input.from,
    guid: input.guid,
    text: input.text,
    attachment: input.attachment
      ? { filename: input.attachment.filename, mimeType: input.attachment.mime_type, content: decodeBase64(input.attachment.content_base64) }
      : undefined,
    isAudioMessage: input.is_audio_message,
    transcription: input.transcription,
    group: input.group,
    replyToGuid: input.reply_to_guid,
  });
  // On the shared sandbox line a GUID may name another account's message.
  if (message.accountId !== actor.accountId) {
    throw invalidParam("guid", "This guid names a message of another account on this line; use a new one.");
  }
  return serializeMessage(message, await fileUrlSigner());
}

export async function simulatorInbox(actor: Actor, input: z.output<typeof SimulatorInboxQuery>) {
  requireSimulator();
  try {
    return await listMessages(actor, { from: input.line, to: input.contact, limit: input.limit, cursor: input.cursor, fromMe: true });
  } catch (err) {
    // A phone that has not texted the line yet has an empty inbox, not a missing chat.
    if (err instanceof ApiError && err.code === "chat_not_found") return { data: [], has_more: false, next_cursor: null };
    throw err;
  }
}

export async function simulateReaction(actor: Actor, input: z.output<typeof SimulatorReactionBody>) {
  const line = await simulatedLine(actor, input.line, input.from);
  const reaction = await bridgeReaction(line, { sender: input.from, target: input.message_id, reaction: input.type, added: input.added });
  return serializeReaction(reaction);
}

export async function simulateTyping(actor: Actor, input: z.output<typeof SimulatorTypingBody>) {
  const line = await simulatedLine(actor, input.line, input.from);
  return serializeTyping(await bridgeTyping(line, { sender: input.from, isTyping: input.is_typing }));
}

export async function simulateReceipt(actor: Actor, input: z.output<typeof SimulatorReceiptBody>) {
  const line = await simulatedLine(actor, input.line, input.from);
  return serializeReceipt(await bridgeReceipt(line, { sender: input.from }));
}

/** SMS fallback without a Mac: iMessage sends to the contact are refused as a real Mac refuses them. */
export async function simulateReachability(actor: Actor, input: z.output<typeof SimulatorReachabilityBody>) {
  const line = await simulatedLine(actor, input.line, input.handle);
  const handle = normalizeHandle(input.handle);
  await setSimulatedReachability(line.handle, handle, input.imessage);
  return { object: "simulator_reachability" as const, line: line.handle, handle, imessage: input.imessage };
}
