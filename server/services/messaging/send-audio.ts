import path from "node:path";
import { z } from "zod";
import type { Actor } from "../access/actor";
import { convertToVoiceMemo } from "../../audio/ffmpeg";
import type { MessagePayload } from "../../outbox/payloads";
import { findFile, openFileBytes, storeFile } from "./files";
import { enforceSandboxQuota, enqueue, fromPool, handle, parentGuid, prepareWrite, replyTo, target } from "./send";
import { scheduledTime, sendAt } from "./schedule";

export const SendAudioMessageBody = z.object({
  from: handle,
  to: handle,
  audio_message: z.string().trim().min(1, "must not be empty").max(200).describe("file_ ID of an uploaded audio file (m4a, mp3, wav, caf, aiff; at most 30 minutes)"),
  reply_to: replyTo,
  send_at: sendAt,
});
export type SendAudioMessageInput = z.output<typeof SendAudioMessageBody>;

/** "memo.m4a" -> "memo.caf" */
export function voiceMemoFilename(original: string): string {
  const base = path.parse(original).name.slice(0, 250) || "audio";
  return `${base}.caf`;
}

export async function sendAudioMessage(actor: Actor, input: SendAudioMessageInput, requestId: string) {
  const at = scheduledTime(input.send_at);
  const picked = await fromPool(actor, input.from, input.to);
  const { line, chat } = await prepareWrite(actor, picked?.line.id ?? input.from, input.to, { richOnly: "Audio messages", advanced: "Audio messages" });
  const original = await findFile(actor, input.audio_message, "audio_message");
  const replyToGuid = await parentGuid(actor, chat, input.reply_to);
  // Streamed from storage into the conversion once it has a slot: a queued request holds no audio.
  const converted = await convertToVoiceMemo(() => openFileBytes(original), "audio_message");
  if (line.isSandbox) await enforceSandboxQuota(actor); // only sends that are accepted count
  const file = await storeFile(actor, { bytes: converted, mimeType: "audio/x-caf", filename: voiceMemoFilename(original.filename) });
  const payload: MessagePayload = { ...target(chat), text: null, attachments: [file.id], reply_to_guid: replyToGuid, is_audio_message: true };
  return enqueue(actor, line, "message", payload, requestId, { sendAt: at, poolId: picked?.poolId });
}
