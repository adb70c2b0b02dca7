import { z } from "zod";

// What a platform reports about the other phones, whatever the platform. ingestInbound() is
// the one entry point; the simulator and future bridges (iMessage, SMS carriers) call it.

export const REACTION_TYPES = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;

export const MAX_TEXT_LENGTH = 20_000;
export const MAX_INBOUND_ATTACHMENT_BYTES = 100 * 1024 * 1024;

const InboundAttachmentSchema = z.object({
  filename: z.string().min(1).max(255),
  mimeType: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, "must be a MIME type such as image/png"),
  content: z.custom<Uint8Array>((v) => v instanceof Uint8Array, "must be bytes"),
});

const base = {
  lineId: z.string(),
  sender: z.string().min(1),
  /** When the platform says it happened (Unix ms); defaults to now. */
  sentAt: z.number().int().positive().optional(),
};

const InboundMessageSchema = z.object({
  type: z.literal("message"),
  ...base,
  /** Platform message GUID; generated when absent. Re-ingesting a GUID is a no-op. */
  guid: z.string().min(1).max(200).optional(),
  text: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  attachment: InboundAttachmentSchema.optional(),
  isAudioMessage: z.boolean().optional(),
  transcription: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  group: z
    .object({
      /** Platform chat identifier; derived from the participants when absent. */
      id: z.string().min(1).max(200).optional(),
      participants: z.array(z.string().min(1)).min(1).max(100),
      name: z.string().max(200).nullable().optional(),
    })
    .optional(),
  replyToGuid: z.string().min(1).max(200).nullable().optional(),
  service: z.enum(["imessage", "sms"]).optional(),
  /** The provider's own chat ID (a BlueBubbles chat GUID), kept on the chat for sending back. */
  providerChatId: z.string().min(1).max(500).optional(),
});

const InboundReactionSchema = z.object({
  type: z.literal("reaction"),
  ...base,
  /** msg_ ID or platform GUID of the message reacted to. */
  target: z.string().min(1),
  reaction: z.enum(REACTION_TYPES),
  added: z.boolean(),
});

const InboundTypingSchema = z.object({ type: z.literal("typing"), ...base, isTyping: z.boolean() });
const InboundReceiptSchema = z.object({ type: z.literal("receipt"), ...base });

export const InboundEventSchema = z.discriminatedUnion("type", [
  InboundMessageSchema,
  InboundReactionSchema,
  InboundTypingSchema,
  InboundReceiptSchema,
]);

export type InboundEvent = z.infer<typeof InboundEventSchema>;
export type InboundMessage = z.infer<typeof InboundMessageSchema>;
