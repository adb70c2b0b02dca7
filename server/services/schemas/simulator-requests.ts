import { z } from "zod";
import { PageQuery } from "../../wire/pagination";
import { MAX_TEXT_LENGTH } from "../../platform/inbound-event";
import { REACTION_TYPES } from "../../platform/reaction-types";

const handle = z.string().trim().min(1, "must not be empty").max(320);
const base = { line: handle, from: handle };

export const SimulatorMessageBody = z.object({
  ...base,
  text: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  attachment: z
    .object({
      filename: z.string().trim().min(1).max(255),
      mime_type: z.string().trim().regex(/^[\w.+-]+\/[\w.+-]+$/, "must be a MIME type such as image/png"),
      content_base64: z.string().min(1).regex(/^[A-Za-z0-9+/=\s_-]+$/, "must be base64"),
    })
    .optional(),
  is_audio_message: z.boolean().optional(),
  transcription: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  group: z
    .object({
      participants: z.array(handle).min(1).max(100),
      name: z.string().max(200).nullable().optional(),
    })
    .optional(),
  reply_to_guid: z.string().trim().min(1).max(200).nullable().optional(),
  guid: z.string().trim().min(1).max(200).optional(),
});

export const SimulatorReactionBody = z.object({
  ...base,
  message_id: z.string().trim().min(1).max(200),
  type: z.enum(REACTION_TYPES),
  added: z.boolean().default(true),
});

export const SimulatorTypingBody = z.object({ ...base, is_typing: z.boolean() });
export const SimulatorReceiptBody = z.object(base);
export const SimulatorReachabilityBody = z
  .object({ line: handle, handle: handle.describe("The contact"), imessage: z.boolean().describe("false: iMessage sends to them are refused as not registered") })
  .strict();

export const SimulatorInboxQuery = PageQuery.extend({
  line: handle,
  /** One phone (or a cht_ chat ID); all of the line's chats when omitted. */
  contact: handle.optional(),
});
