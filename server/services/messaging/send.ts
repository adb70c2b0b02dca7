import { z } from "zod";
import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { MessagePayload as MessagePayloadSchema, type MessagePayload, type OutboxKind, type ReactionPayload, type ReceiptPayload, type TypingPayload } from "../../outbox/payloads";
import { findOutboxItem } from "./outbox";
import { addGuardedToOutbox, addToOutbox } from "../../outbox/enqueue";
import { checkChat, checkRecipientName } from "../../policy/key-guardrails";
import { checkSendLimits, GUARDED_KINDS } from "../../policy/key-send-limits";
import { requestApproval } from "./approvals";
import { fire } from "../../kernel/signals";
import { sendsSerially } from "../../outbox/serial";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { Chat, Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { hit } from "../access/rate-limit";
import { newId } from "../../kernel/ids";
import { processSingleton } from "../../kernel/singleton";
import { MAX_TEXT_LENGTH } from "../../platform/inbound-event";
import { REACTION_TYPES } from "../../platform/reaction-types";
import { CapabilitiesSchema } from "../../platform/types";
import { moveReadMarker, resolveChat } from "./chats";
import { findFile } from "./files";
import { requireIdKind } from "../access/id-params";
import { resolveLine } from "../lines/lines";
import { findMessage } from "./messages";
import { DAY_MS, sandboxQuotaBucket } from "../lines/sandbox";
import { scheduledTime, sendAt } from "./schedule";
import { checkContactFirst, policyOf } from "../../policy/line-send-policy";
import { openChat } from "./chats";
import { choosePoolLine } from "../pools/pools";

export const handle = z.string().trim().min(1, "must not be empty").max(320);

export const replyTo = z.string().trim().min(1).max(200).nullable().optional();

export const SendMessageBody = z.object({
  from: handle.describe("The line: its handle or ln_ ID; or a pool_ ID (extension), whose line is chosen per contact"),
  to: handle.describe("A phone number, platform account ID or cht_ chat ID (the contact must have messaged the line first)"),
  text: z.string().max(MAX_TEXT_LENGTH, `must be at most ${MAX_TEXT_LENGTH} characters`).nullable().optional().describe("Up to 20,000 characters; text and/or an attachment"),
  attachments: z.array(z.string().trim()).max(1, "at most one attachment per message").optional().describe("At most one file_ ID from POST /v1/files"),
  reply_to: replyTo.describe("msg_ ID or GUID of a message in the same chat"),
  send_at: sendAt,
});
export type SendMessageInput = z.output<typeof SendMessageBody>;

// Passing the contact-first rule never reverts and a chat's identity never changes, so the hot send path skips the
// lookup; entries expire only to bound memory.
const sendableChats = processSingleton("sendable-chats", () => new Map<string, { chat: Chat; until: number }>());
const SENDABLE_CACHE_MS = 60_000;
const SENDABLE_CACHE_MAX = 50_000;

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
  const cacheKey = `${line.id} ${actor.accountId} ${to}`;
  // A key with guardrails reads the chat fresh: the owner may have paused it a moment ago.
  const cached = actor.guardrails ? undefined : sendableChats.get(cacheKey);
  if (cached && cached.until > Date.now()) return cached.chat;
  let chat: Chat | null;
  if (to.startsWith("cht_")) {
    chat = await resolveChat(actor, line, to);
  } else {
    chat = await db.chat.findUnique({
      where: { lineId_accountId_identifier: { lineId: line.id, accountId: actor.accountId, identifier: normalizeHandle(to) } },
    });
  }
  if (chat?.hasReceivedInbound) {
    if (sendableChats.size >= SENDABLE_CACHE_MAX) sendableChats.clear();
    sendableChats.set(cacheKey, { chat, until: Date.now() + SENDABLE_CACHE_MS });
  }
  if (!policyOf(line).contact_first && !to.startsWith("cht_")) {
    // The line may message people first (its operator switched contact-first off). A key
    // with an allow list is refused a contact it does not list before a chat is opened for it.
    if (chat) return chat;
    checkRecipientName(actor, to);
    return openChat(actor, line, to);
  }
  checkContactFirst(line, chat, to);
  return chat;
}

export async function enforceSandboxQuota(actor: Actor, now = Date.now()): Promise<void> {
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

/** `advanced` names what needs advanced features; `richOnly` what SMS lines cannot send. */
export async function prepareWrite(actor: Actor, from: string, to: string, options: { advanced?: string; richOnly?: string } = {}) {
  const line = await resolveLine(actor, from);
  if (!line.isActive) throw invalidParam("from", `Line ${line.handle} is deactivated.`);
  if (options.richOnly && line.service === "sms") {
    throw invalidParam("from", `${options.richOnly} need a line on the rich-messaging service; ${line.handle} is an SMS line.`);
  }
  if (options.advanced) requireAdvanced(line, options.advanced);
  const chat = await targetChat(actor, line, to);
  checkChat(actor, chat);
  return { line, chat };
}

export interface EnqueueOptions {
  retryOf?: string | null;
  sendAt?: Date | null;
  poolId?: string | null;
}

export async function enqueue(actor: Actor, line: Line, kind: OutboxKind, payload: { chat_id: string }, requestId: string, options: EnqueueOptions = {}) {
  const id = newId("outbox");
  const item = { id, accountId: actor.accountId, lineId: line.id, apiKeyId: actor.keyId, kind, payload, requestId, ...options };
  if (actor.guardrails && GUARDED_KINDS.includes(kind)) {
    // A key with guardrails: its counted limits are checked under its lock, with the insert.
    const approval = actor.guardrails.require_approval;
    await addGuardedToOutbox(
      { ...item, approval },
      (query) => checkSendLimits(query, actor, kind, payload.chat_id),
      (unit) => (approval ? requestApproval(unit, item.id) : Promise.resolve()),
    );
    if (approval) return { object: "outbox_item" as const, id, status: "pending" as const }; // it goes once approved
  } else {
    await addToOutbox(item);
  }
  fire("outbox.stored", { id, lineId: line.id, serial: sendsSerially(line.provider) }); // a pending item changes no cached list (lines, chats, messages): no notification
  return { object: "outbox_item" as const, id, status: "pending" as const };
}

export const target = (chat: Chat) => ({ chat_id: chat.id, to: chat.identifier, is_group: chat.isGroup });

/** Which must be in the chat being sent to. */
export async function parentGuid(actor: Actor, chat: Chat, replyTo: string | null | undefined): Promise<string | null> {
  if (!replyTo) return null;
  const parent = await findMessage(actor, replyTo, "reply_to", chat.id);
  if (parent.chatId !== chat.id) throw invalidParam("reply_to", "reply_to must be a message in the same chat.");
  return parent.guid;
}

export async function sendMessage(actor: Actor, input: SendMessageInput, requestId: string) {
  const text = input.text === "" ? null : (input.text ?? null);
  const attachments = input.attachments ?? [];
  if (text === null && attachments.length === 0) {
    throw new ApiError("missing_required_parameter", "Missing required parameter: text or attachments (at least one; attachments takes one file_ ID from POST /v1/files).", { param: "text" });
  }
  const at = scheduledTime(input.send_at);
  for (const id of attachments) {
    requireIdKind("file", id, "attachments");
  }
  const picked = await fromPool(actor, input.from, input.to);
  const { line, chat } = await prepareWrite(actor, picked?.line.id ?? input.from, input.to);
  if (attachments.length && CapabilitiesSchema.safeParse(line.capabilities).data?.attachments === false) {
    throw invalidParam("attachments", `Line ${line.handle} sends text only: its provider (${line.provider}) cannot send attachments.`);
  }
  for (const id of attachments) await findFile(actor, id, "attachments");
  const replyToGuid = await parentGuid(actor, chat, input.reply_to);
  if (line.isSandbox) await enforceSandboxQuota(actor);
  const payload: MessagePayload = { ...target(chat), text, attachments, reply_to_guid: replyToGuid, is_audio_message: false };
  return enqueue(actor, line, "message", payload, requestId, { sendAt: at, poolId: picked?.poolId });
}

export async function fromPool(actor: Actor, from: string, to: string) {
  const value = from.trim();
  return value.startsWith("pool_") ? choosePoolLine(actor, value, to) : null;
}

export const SendReactionBody = z.object({
  from: handle,
  to: handle,
  message_id: z.string().trim().min(1).max(200).describe("msg_ ID or GUID of a message in the chat named by `to`"),
  type: z.enum(REACTION_TYPES),
  remove: z.boolean().optional().describe("Extension: true removes the line's earlier reaction of this type instead of adding one"),
});

export async function sendReaction(actor: Actor, input: z.output<typeof SendReactionBody>, requestId: string) {
  const { line, chat } = await prepareWrite(actor, input.from, input.to, { advanced: "Reactions" });
  const message = await findMessage(actor, input.message_id, "message_id", chat.id);
  if (message.chatId !== chat.id) throw invalidParam("message_id", "message_id must be a message in the chat named by 'to'.");
  const payload: ReactionPayload = { ...target(chat), message_id: message.id, message_guid: message.guid, type: input.type, added: !input.remove };
  return enqueue(actor, line, "reaction", payload, requestId);
}

export const SendTypingBody = z.object({
  from: handle,
  to: handle,
  state: z.enum(["on", "off"]).default("on").describe('"on" starts typing, "off" stops it'),
});

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
  const item = await enqueue(actor, line, "receipt", payload, requestId);
  // The owner's program read the chat: its messages are no longer unread in the inbox.
  await moveReadMarker(actor.accountId, chat.id);
  return item;
}

// The failed item stays failed; the new one names it (retryOf), so the conversation shows the message once. A send
// already retried is not retried twice.
export async function retrySend(actor: Actor, outboxId: string, requestId: string) {
  const item = await findOutboxItem(actor, outboxId);
  if (item.kind !== "message" || item.status !== "failed") {
    throw invalidParam("id", `Only a failed message can be sent again; ${item.id} is a ${item.kind} item with status ${item.status}.`);
  }
  const db = await getDb();
  const again = await db.outboxItem.findFirst({ where: { retryOf: item.id }, select: { id: true } });
  if (again) throw invalidParam("id", `${item.id} was already sent again as ${again.id}.`);
  const payload = MessagePayloadSchema.parse(item.payload);
  const { line, chat } = await prepareWrite(actor, item.lineId, payload.chat_id);
  if (line.isSandbox) await enforceSandboxQuota(actor);
  return enqueue(actor, line, "message", { ...payload, ...target(chat) }, requestId, { retryOf: item.id });
}
