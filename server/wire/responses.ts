import { z } from "zod";
import { PROVIDER_NAME_LIST, type ProviderName } from "../platform/about";

// The JSON bodies /v1 answers with, as zod schemas: the OpenAPI document (and later the client
// library) is generated from these. server/wire/responses.check.ts makes the compiler
// compare each with its serializer's return type, so they cannot drift apart.

/** Every provider in server/platform/registry.ts (tests/openapi.test.ts keeps the two equal). */
/** The providers (server/platform/about.ts): each describes itself there. */
export const LINE_PROVIDERS = PROVIDER_NAME_LIST;
export type LineProvider = ProviderName;

const ms = z.number().int().describe("Unix time in milliseconds");
const msOrNull = ms.nullable();

const SendPolicySchema = z
  .object({
    contact_first: z.boolean().describe("Sends only to contacts that messaged the line first (the contact-first rule)"),
    new_contacts_per_hour: z.number().int().nullable().describe("Conversations with new contacts per sliding hour; null: no limit"),
    new_contacts_per_day: z.number().int().nullable().describe("The same per sliding 24 hours; null: no limit"),
    quiet_hours: z
      .object({ start: z.string().describe("HH:MM"), end: z.string().describe("HH:MM"), timezone: z.string().describe("IANA time zone") })
      .nullable()
      .describe("A daily local-time window during which new messages wait (a reply to a contact who wrote in the last 30 minutes still goes)"),
    rate_per_second: z.number().describe("Sends per second a provider line starts, at most"),
  })
  .meta({ id: "SendPolicy" });

export const LineSchema = z
  .object({
    object: z.literal("line"),
    id: z.string().describe("ln_ ID"),
    handle: z.string().describe("Phone number (E.164) or platform account ID"),
    label: z.string().nullable(),
    service: z.string().describe("imessage | sms | auto"),
    is_active: z.boolean(),
    advanced_features: z.boolean().describe("Reactions, typing indicators and read receipts"),
    is_sandbox: z.boolean(),
    created_at: ms,
    provider: z.enum(LINE_PROVIDERS).describe("Extension: the provider carrying the line"),
    status: z
      .enum(["connected", "degraded", "disconnected"])
      .describe("Extension: the provider's health. degraded: a call or probe failed (or the Private API helper is gone); disconnected: several in a row. Sends wait while disconnected."),
    status_reason: z.string().nullable().describe("Extension: why the line is degraded or disconnected"),
    last_event_at: msOrNull.describe("Extension: when the provider last answered or sent an event (Unix ms)"),
    send_policy: SendPolicySchema.describe("Extension: when, and to whom, the line may send (docs/send-policy.md)"),
  })
  .meta({ id: "Line" });

export const ChatSchema = z
  .object({
    object: z.literal("chat"),
    id: z.string().describe("cht_ ID"),
    line_id: z.string(),
    identifier: z.string().describe("The contact's handle, or a group identifier"),
    service: z.string(),
    name: z.string().nullable(),
    is_group: z.boolean(),
    participants: z.array(z.string()),
    has_received_inbound: z.boolean().describe("Whether the contact has messaged the line (contact-first rule)"),
    last_message_at: msOrNull,
    created_at: ms,
    paused_at: msOrNull.describe("Extension (human takeover). Since when the owner has paused automated sending in the chat; null when it is not paused"),
    paused_by: z.string().nullable().describe("Extension. Who paused it: a user ID (dashboard) or an API key ID"),
  })
  .meta({ id: "Chat" });

const AttachmentSchema = z
  .object({
    id: z.string(),
    file_id: z.string(),
    filename: z.string(),
    mime_type: z.string(),
    size: z.number().int(),
    url: z.string().describe("Signed download URL, valid for one hour"),
    transcription: z.string().nullable().describe("Voice memos: the platform's transcription, once available"),
  })
  .meta({ id: "Attachment" });

export const MessageSchema = z
  .object({
    object: z.literal("message"),
    id: z.string().describe("msg_ ID"),
    line_id: z.string(),
    chat_id: z.string(),
    guid: z.string().describe("The platform's message GUID"),
    sender: z.string(),
    text: z.string().nullable(),
    attachments: z.array(AttachmentSchema),
    is_from_me: z.boolean(),
    is_audio_message: z.boolean().nullable(),
    service: z.string().nullable(),
    outbox_id: z.string().nullable().describe("The outbox item that sent it (outgoing messages)"),
    sent_at: ms,
    synced_at: ms,
    reply_to_guid: z.string().nullable(),
    delivery_status: z
      .enum(["sent", "delivered", "undelivered", "failed"])
      .nullable()
      .describe(
        "Extension. Outgoing messages on lines whose provider reports delivery (SMS Gateway, Twilio): sent once the provider accepted it, then delivered, undelivered or failed as the carrier reports (a final state is never left). Null for incoming messages and on other lines.",
      ),
    delivered_at: msOrNull.describe("Extension. When the provider reported the message delivered"),
    delivery_error: z.string().nullable().describe("Extension. The provider's error code and reason when undelivered or failed"),
    fallback: z.boolean().describe("Extension. Sent as SMS because the recipient cannot receive iMessage (SMS fallback)"),
  })
  .meta({ id: "Message" });

export const ReactionSchema = z
  .object({
    object: z.literal("reaction"),
    id: z.string(),
    message_id: z.string(),
    chat_id: z.string(),
    type: z.string().describe("love | like | dislike | laugh | emphasize | question"),
    sender: z.string(),
    is_from_me: z.boolean(),
    added: z.boolean(),
    sent_at: ms,
    synced_at: ms,
  })
  .meta({ id: "Reaction" });

export const TypingIndicatorSchema = z
  .object({
    object: z.literal("typing_indicator"),
    id: z.string(),
    chat_id: z.string(),
    handle: z.string(),
    is_typing: z.boolean(),
    updated_at: ms,
  })
  .meta({ id: "TypingIndicator" });

export const ReadReceiptSchema = z
  .object({
    object: z.literal("read_receipt"),
    id: z.string(),
    chat_id: z.string(),
    handle: z.string(),
    last_read_at: ms,
    synced_at: ms,
  })
  .meta({ id: "ReadReceipt" });

export const OutboxItemSchema = z
  .object({
    object: z.literal("outbox_item"),
    id: z.string().describe("obx_ ID"),
    line_id: z.string(),
    kind: z.string().describe("message | audio_message | reaction | typing | receipt"),
    status: z.string().describe("pending | claimed | sent | failed"),
    not_before: msOrNull.describe("Extension. While the item is held: when it may go (Unix ms); null when it is not held, or only a person can release it"),
    hold_reason: z
      .enum(["scheduled", "quiet_hours", "new_contact_budget", "line_rate", "line_unavailable", "approval"])
      .nullable()
      .describe("Extension. Why a pending item waits: its send_at (scheduled), the line's quiet hours, its new-contact budget, its pace (line_rate), its provider being unreachable (line_unavailable), or the owner's approval (approval: its key has require_approval)"),
    canceled_at: msOrNull.describe("Extension. When it was canceled (DELETE /v1/outbox): it is then failed with error \"canceled\""),
    pool_id: z.string().nullable().describe("Extension. The pool named as `from`, when the line (line_id) was chosen from a pool"),
    fallback: z.boolean().describe("Extension. The message went as SMS because the recipient cannot receive iMessage"),
    error: z
      .string()
      .nullable()
      .describe(
        'Why it failed (also the error of its message.failed webhook): "canceled" (the owner canceled it), "rejected" (the owner declined it), "no_fallback_line: …" (the recipient cannot receive iMessage and no SMS line of its pool may send it; the sentence says why), or the provider\'s or engine\'s reason',
      ),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    created_at: ms,
    completed_at: msOrNull,
    segments: z.number().int().nullable().describe("Extension. How many SMS segments the provider split the text into, when it reported it"),
    payload: z.unknown().describe("What will be (or was) sent"),
  })
  .meta({ id: "OutboxItem" });

export const AcceptedSchema = z
  .object({
    object: z.literal("outbox_item"),
    id: z.string().describe("obx_ ID: poll GET /v1/outbox?id= to follow delivery"),
    status: z.literal("pending"),
  })
  .meta({ id: "AcceptedWrite" });

export const FileSchema = z
  .object({
    object: z.literal("file"),
    id: z.string().describe("file_ ID, usable as an attachment or audio message"),
    url: z.string(),
    filename: z.string(),
    mime_type: z.string(),
    size: z.number().int(),
    created_at: ms,
  })
  .meta({ id: "File" });

export const SandboxSchema = z
  .object({
    object: z.literal("sandbox"),
    status: z.enum(["missing", "pending", "active"]),
    activation_code: z.string().nullable(),
    sandbox_line_handle: z.string(),
    contact_identifier: z.string().nullable(),
    activated_at: msOrNull,
    usage: z.object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int(), resets_at: ms }),
  })
  .meta({ id: "Sandbox" });

export const WebhookSchema = z
  .object({
    object: z.literal("webhook"),
    id: z.string().describe("wh_ ID"),
    line_ids: z.array(z.string()),
    url: z.string(),
    events: z.array(z.string()),
    is_active: z.boolean(),
    disabled_reason: z.string().nullable(),
    created_at: ms,
    secret: z.string().optional().describe("whsec_ signing secret: only in the create and rotate-secret responses"),
  })
  .meta({ id: "Webhook" });

const WebhookAttemptSchema = z
  .object({
    started_at: ms,
    duration_ms: z.number().int(),
    status_code: z.number().int().nullable(),
    response_excerpt: z.string().nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: "WebhookAttempt" });

export const WebhookDeliverySchema = z
  .object({
    object: z.literal("webhook_delivery"),
    id: z.string().describe("dlv_ ID, also the X-Webhook-Delivery-Id header"),
    webhook_id: z.string(),
    event: z.string(),
    status: z.string().describe("pending | delivering | succeeded | failed"),
    attempts: z.number().int(),
    next_attempt_at: msOrNull,
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: ms,
    completed_at: msOrNull,
    data: z.unknown().optional().describe("The event's data (one delivery by ?id= only)"),
    attempt_log: z.array(WebhookAttemptSchema).optional().describe("Every attempt (one delivery by ?id= only)"),
  })
  .meta({ id: "WebhookDelivery" });

export const DeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: "Deleted" });
export const ResendSchema = z.object({ object: z.literal("resend"), resent: z.number().int() }).meta({ id: "Resend" });

export const ErrorSchema = z
  .object({
    error: z.object({
      type: z.string().describe("authentication_error | authorization_error | invalid_request_error | not_found_error | rate_limit_error | api_error"),
      code: z.string().describe("A stable code; see the error table"),
      message: z.string(),
      param: z.string().optional(),
    }),
    request_id: z.string(),
  })
  .meta({ id: "Error" });

const BudgetWindowSchema = z.object({
  used: z.number().int().describe("New contacts messaged in the window"),
  limit: z.number().int().nullable().describe("null: no limit"),
  remaining: z.number().int().nullable(),
  resets_at: msOrNull.describe("When the oldest of them leaves the window (a slot frees)"),
}).meta({ id: "BudgetWindow" });

const LineCapacitySchema = z
  .object({
    line_id: z.string(),
    handle: z.string(),
    status: z.string().describe("connected | degraded | disconnected"),
    new_contacts: z.object({ hour: BudgetWindowSchema, day: BudgetWindowSchema }).describe("The new-contact budgets, sliding hour and day"),
    quiet_hours: z.object({ active: z.boolean(), until: msOrNull }),
    queued: z
      .object({
        scheduled: z.number().int(),
        quiet_hours: z.number().int(),
        new_contact_budget: z.number().int(),
        line_rate: z.number().int(),
        line_unavailable: z.number().int(),
        approval: z.number().int(),
      })
      .describe("Pending sends that wait, by hold_reason"),
    next_slot_at: msOrNull.describe("When a send to a new contact could go out (budgets and quiet hours); null when a budget is 0"),
  })
  .meta({ id: "LineCapacity" });

export const CapacitySchema = z
  .object({
    object: z.literal("capacity"),
    from: z.string(),
    pool_id: z.string().nullable().describe("When `from` is a pool: its ID; lines are the pool's lines the key may use"),
    lines: z.array(LineCapacitySchema),
  })
  .meta({ id: "Capacity" });

export const PoolSchema = z
  .object({
    object: z.literal("pool"),
    id: z.string().describe("pool_ ID: usable as `from` of POST /v1/messages"),
    name: z.string(),
    line_ids: z.array(z.string()).describe("Its lines (those the key may use)"),
    created_at: ms,
  })
  .meta({ id: "Pool" });

/** A page of a list: newest (or oldest) first, with an opaque cursor for the next page. */
export function page<T extends z.ZodType>(item: T, name: string) {
  return z
    .object({
      data: z.array(item),
      has_more: z.boolean(),
      next_cursor: z.string().nullable().describe("Pass as ?cursor= for the next page"),
    })
    .meta({ id: `${name}Page` });
}
