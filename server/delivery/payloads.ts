import { z } from "zod";

// What an outbox item carries, validated when it is delivered (whichever engine runs it).
export const MessagePayload = z.object({
  chat_id: z.string(),
  to: z.string(),
  is_group: z.boolean(),
  text: z.string().nullable(),
  attachments: z.array(z.string()),
  reply_to_guid: z.string().nullable(),
});
export type MessagePayload = z.infer<typeof MessagePayload>;
