import { sql } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { log } from "../../kernel/log";
import { fetchProviderAttachment, type InboundFile } from "../../platform/inbound-event";
import type { ProviderLine } from "../../platform/provider";
import type { ProviderAttachmentRef } from "../../platform/types";
import { storeBlob } from "../../storage/blobs";
import { noteStorageAvailable, noteStorageFull } from "../lines/line-health";

// Checked before each download: an account overshoots ACCOUNT_STORAGE_QUOTA_MB by at most the downloads under way.

class StorageQuotaReached extends Error {}

async function storedBytes(accountId: string): Promise<number> {
  const [row] = await sql<{ bytes: number }>(`SELECT COALESCE(SUM(size), 0)::float8 AS bytes FROM "File" WHERE "accountId" = $1`, [accountId]);
  return Number(row?.bytes ?? 0);
}

async function checkMediaQuota(line: Line): Promise<void> {
  const quotaMb = config().ACCOUNT_STORAGE_QUOTA_MB;
  if (!line.accountId || (await storedBytes(line.accountId)) < quotaMb * 1024 * 1024) {
    await noteStorageAvailable(line.id);
    return;
  }
  const reason = `received media is not stored: this account's files use up its storage quota of ${quotaMb} MB (ACCOUNT_STORAGE_QUOTA_MB); delete files or ask the operator to raise it`;
  await noteStorageFull(line.id, reason);
  throw new StorageQuotaReached(reason);
}

function quotaNote(text: string, ref: ProviderAttachmentRef): string {
  const size = ref.size === null ? "" : `, ${ref.size} bytes`;
  const note = `[attachment ${ref.filename || "attachment"} (${ref.mimeType}${size}) not stored: the account's storage quota is used up]`;
  return text ? `${text}\n${note}` : note;
}

async function download(line: Line, pl: ProviderLine, ref: ProviderAttachmentRef): Promise<InboundFile | null> {
  await checkMediaQuota(line);
  const fetched = await fetchProviderAttachment(line, pl, ref, (chunks) => storeBlob(chunks));
  if (!fetched) return null;
  const type = fetched.mimeType && /^[\w.+-]+\/[\w.+-]+$/.test(fetched.mimeType) ? fetched.mimeType : ref.mimeType;
  return { filename: ref.filename.slice(0, 255) || "attachment", mimeType: type, blob: fetched.content, transcription: null };
}

/** A file that cannot be had leaves a note in the text instead: the message itself is never dropped. */
export async function receiveMedia(line: Line, pl: ProviderLine, guid: string, text: string | null, refs: ProviderAttachmentRef[]): Promise<{ file: InboundFile | null; text: string | null }> {
  const [first, ...rest] = refs;
  if (rest.length) log().warn({ line_id: line.id, guid, dropped: rest.length }, "inbound message: attachments after the first not taken in");
  if (!first) return { file: null, text };
  try {
    return { file: await download(line, pl, first), text };
  } catch (err) {
    // The provider's retry or the next catch-up brings the event again.
    if (err instanceof ApiError && err.code === "storage_unavailable") throw err;
    log().warn({ line_id: line.id, guid, err: (err as Error).message }, "inbound message: attachment not downloaded");
    // Past the quota the owner must act: the note names the file even beside text.
    if (err instanceof StorageQuotaReached) return { file: null, text: quotaNote(text ?? "", first) };
    return { file: null, text: text || `[attachment ${first.filename} could not be downloaded]` };
  }
}
