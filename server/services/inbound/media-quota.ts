import { sql } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { config } from "../../kernel/config";
import type { ProviderAttachmentRef } from "../../platform/types";
import { noteStorageAvailable, noteStorageFull } from "../lines/line-health";

// ACCOUNT_STORAGE_QUOTA_MB: what one account's stored files (uploads and received media) may
// add up to. Media a provider sends past it is not downloaded: the message is still taken in,
// with a note naming the attachment, and the line shows why (line-health). Checked before each
// download, so an account overshoots by at most the downloads under way.

export class StorageQuotaReached extends Error {}

async function storedBytes(accountId: string): Promise<number> {
  const [row] = await sql<{ bytes: number }>(`SELECT COALESCE(SUM(size), 0)::float8 AS bytes FROM "File" WHERE "accountId" = $1`, [accountId]);
  return Number(row?.bytes ?? 0);
}

/** Throws StorageQuotaReached, and warns on the line, when the line's account may store no more media. */
export async function checkMediaQuota(line: Line): Promise<void> {
  const quotaMb = config().ACCOUNT_STORAGE_QUOTA_MB;
  if (!line.accountId || (await storedBytes(line.accountId)) < quotaMb * 1024 * 1024) {
    await noteStorageAvailable(line.id);
    return;
  }
  const reason = `received media is not stored: this account's files use up its storage quota of ${quotaMb} MB (ACCOUNT_STORAGE_QUOTA_MB); delete files or ask the operator to raise it`;
  await noteStorageFull(line.id, reason);
  throw new StorageQuotaReached(reason);
}

/** The message's text with a note of the attachment that was not stored (its name and type). */
export function withQuotaNote(text: string, ref: ProviderAttachmentRef): string {
  const size = ref.size === null ? "" : `, ${ref.size} bytes`;
  const note = `[attachment ${ref.filename || "attachment"} (${ref.mimeType}${size}) not stored: the account's storage quota is used up]`;
  return text ? `${text}\n${note}` : note;
}
