import { z } from "zod";

const target = { chat_id: z.string(), to: z.string(), is_group: z.boolean() };
export const OutboxTarget = z.object(target);

export const MessagePayload = z.object({
  ...target,
  text: z.string().nullable(),
  attachments: z.array(z.string()),
  reply_to_guid: z.string().nullable(),
  /** A native voice memo (POST /v1/audio-messages): the one attachment is CAF/Opus audio. */
  is_audio_message: z.boolean().default(false),
});
export type MessagePayload = z.infer<typeof MessagePayload>;

export const ReactionPayload = z.object({
  ...target,
  message_id: z.string(),
  message_guid: z.string(),
  type: z.string(),
  added: z.boolean().default(true),
});
export type ReactionPayload = z.infer<typeof ReactionPayload>;

export const TypingPayload = z.object({ ...target, is_typing: z.boolean() });
export type TypingPayload = z.infer<typeof TypingPayload>;

export const ReceiptPayload = z.object(target);
export type ReceiptPayload = z.infer<typeof ReceiptPayload>;

export const OUTBOX_KINDS = ["message", "reaction", "typing", "receipt"] as const;
export type OutboxKind = (typeof OUTBOX_KINDS)[number];
