import { z } from "zod";
import type { Actor } from "../auth/actor";
import { config } from "../config";
import { getDb } from "../db";
import type { MessagePayload, OutboxKind, ReactionPayload, ReceiptPayload, TypingPayload } from "../delivery/payloads";
import { wakeRunner } from "../delivery/runner";
import { ApiError, invalidParam, missingParam } from "../errors";
import type { Chat, Line } from "../generated/prisma/client";
import { normalizeHandle } from "../handles";
import { hit } from "../http/rate-limit";
import { isId, newId } from "../ids";
import { MAX_TEXT_LENGTH, REACTION_TYPES } from "../platform/events";
import { resolveChat } from "./chats";
import { findFile } from "./files";
import { resolveLine } from "./lines";
import { findMessage } from "./messages";
import { DAY_MS, sandboxQuotaBucket } from "./sandbox";

// The write side: validate, apply every policy synchronously, store a pending outbox item
// and answer at once. Delivery happens after, in server/delivery.

const handle = z.string().trim().min(1, "must not be empty").max(320);

export const SendMessageBody = z.object({
  from: handle,
  to: handle,
  text: z.string().max(MAX_TEXT_LENGTH, `must be at most ${MAX_TEXT_LENGTH} characters`).nullable().optional(),
  attachments: z.array(z.string().trim()).max(1, "at most one attachment per message").optional(),
  reply_to: z.string().trim().min(1).max(200).nullable().optional(),
});
export type SendMessageInput = z.output<typeof SendMessageBody>;

/** The chat a send goes to, enforcing the contact-first rule and the sandbox pairing. */
async function targetChat(actor: Actor, line: Line, to: string): Promise<Chat> {
  const db = await getDb();
  if (line.isSandbox) {
    const state = await db.sandboxState.findUnique({ where: { accountId: actor.accountId } });
    const chat = to.startsWith("cht_") ? await resolveChat(actor, line, to) : null;
    const identifier = chat?.identifier ?? normalizeHandle(to);
    if (!state?.contactIdentifier || identifier !== state.contactIdentifier) {
      throw new ApiError(
        "sandbox_contact_mismatch",
        `On the sandbox line you can only send to your paired phone${state?.contactIdentifier ? ` (${state.contactIdentifier})` : ""}.`,
        { param: "to" },
      );
    }
    return chat ?? (await resolveChat(actor, line, identifier));
  }
  let chat: Chat | null;
  if (to.startsWith("cht_")) {
    chat = await resolveChat(actor, line, to);
  } else {
    chat = await db.chat.findUnique({
      where: { lineId_accountId_identifier: { lineId: line.id, accountId: actor.accountId, identifier: normalizeHandle(to) } },
    });
  }
  if (!chat || !chat.hasReceivedInbound) {
    throw new ApiError(
      "contact_has_not_messaged",
      chat?.isGroup
        ? "This group chat has not sent a message to this line yet; you can send once it has."
        : `${to} has not messaged line ${line.handle} yet. Contacts must message a line before it can message them.`,
      { param: "to" },
    );
  }
  return chat;
}

async function enforceSandboxQuota(actor: Actor, now = Date.now()): Promise<void> {
  const limit = config().SANDBOX_DAILY_LIMIT;
  const state = await hit(sandboxQuotaBucket(actor.accountId), limit, DAY_MS, 1, now);
  if (!state.allowed) {
    const retryAfter = Math.max(1, Math.ceil((state.resetAt - now) / 1000));
    throw new ApiError(
      "sandbox_quota_exceeded",
      `The sandbox allows ${limit} messages per day per account; the quota resets at midnight UTC.`,
      { headers: { "Retry-After": String(retryAfter) } },
    );
  }
}

function requireAdvanced(line: Line, what: string): void {
  if (!line.advancedFeatures) {
    throw new ApiError("advanced_features_required", `${what} need a line with advanced features; line ${line.handle} does not have them.`, {
      param: "from",
    });
  }
}

/** The line and chat of a write, after line access, activity, contact-first and sandbox checks. */
async function prepareWrite(actor: Actor, from: string, to: string, options: { advanced?: string } = {}) {
  const line = await resolveLine(actor, from);
  if (!line.isActive) throw invalidParam("from", `Line ${line.handle} is deactivated.`);
  if (options.advanced) requireAdvanced(line, options.advanced);
  const chat = await targetChat(actor, line, to);
  return { line, chat };
}

async function enqueue(actor: Actor, line: Line, kind: OutboxKind, payload: object, requestId: string) {
  const db = await getDb();
  const item = await db.outboxItem.create({
    data: { id: newId("outbox"), accountId: actor.accountId, lineId: line.id, apiKeyId: actor.keyId, kind, payload, requestId },
  });
  wakeRunner(); // a pending item changes no cached list (lines, chats, messages): no notification
  return { object: "outbox_item" as const, id: item.id, status: "pending" as const };
}

const target = (chat: Chat) => ({ chat_id: chat.id, to: chat.identifier, is_group: chat.isGroup });

export async function sendMessage(actor: Actor, input: SendMessageInput, requestId: string) {
  const text = input.text === "" ? null : (input.text ?? null);
  const attachments = input.attachments ?? [];
  if (text === null && attachments.length === 0) throw missingParam("text");
  for (const id of attachments) {
    if (!isId("file", id)) throw invalidParam("attachments", `'${id}' is not a file_ ID; upload files with POST /v1/files first.`);
  }
  const { line, chat } = await prepareWrite(actor, input.from, input.to);
  for (const id of attachments) await findFile(actor, id, "attachments");
  let replyToGuid: string | null = null;
  if (input.reply_to) {
    const parent = await findMessage(actor, input.reply_to, "reply_to");
    if (parent.chatId !== chat.id) throw invalidParam("reply_to", "reply_to must be a message in the same chat.");
    replyToGuid = parent.guid;
  }
  if (line.isSandbox) await enforceSandboxQuota(actor);
  const payload: MessagePayload = { ...target(chat), text, attachments, reply_to_guid: replyToGuid, is_audio_message: false };
  return enqueue(actor, line, "message", payload, requestId);
}

export const SendReactionBody = z.object({
  from: handle,
  to: handle,
  message_id: z.string().trim().min(1).max(200),
  type: z.enum(REACTION_TYPES),
});

export async function sendReaction(actor: Actor, input: z.output<typeof SendReactionBody>, requestId: string) {
  const { line, chat } = await prepareWrite(actor, input.from, input.to, { advanced: "Reactions" });
  const message = await findMessage(actor, input.message_id, "message_id");
  if (message.chatId !== chat.id) throw invalidParam("message_id", "message_id must be a message in the chat named by 'to'.");
  const payload: ReactionPayload = { ...target(chat), message_id: message.id, message_guid: message.guid, type: input.type };
  return enqueue(actor, line, "reaction", payload, requestId);
}

export const SendTypingBody = z.object({ from: handle, to: handle, state: z.enum(["on", "off"]).default("on") });

export async function sendTyping(actor: Actor, input: z.output<typeof SendTypingBody>, requestId: string) {
  const { line, chat } = await prepareWrite(actor, input.from, input.to, { advanced: "Typing indicators" });
  if (chat.isGroup) {
    throw invalidParam("to", "Typing indicators can only be sent in one-to-one chats; the platform does not show them in groups.");
  }
  const payload: TypingPayload = { ...target(chat), is_typing: input.state === "on" };
  return enqueue(actor, line, "typing", payload, requestId);
}

export const SendReceiptBody = z.object({ from: handle, to: handle });

export async function sendReceipt(actor: Actor, input: z.output<typeof SendReceiptBody>, requestId: string) {
  const { line, chat } = await prepareWrite(actor, input.from, input.to, { advanced: "Read receipts" });
  const payload: ReceiptPayload = target(chat);
  return enqueue(actor, line, "receipt", payload, requestId);
}
