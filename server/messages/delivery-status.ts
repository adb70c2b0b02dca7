import { valuesList } from "../db";
import type { Attachment, Message } from "../generated/prisma/client";
import type { DeliveryReport } from "../platform/types";
import { serializeMessage } from "../wire/serializers";
import type { FileUrlSigner } from "../storage/signed-urls";
import type { Unit } from "../write/unit";

// Delivery status (docs/providers.md): reports arrive unordered and even before their send
// returns, so each is stored first and the message's state is computed from all it has.

export interface ReportKey {
  lineId: string;
  guid: string;
}

export type StoredReport = ReportKey & DeliveryReport & { segments?: number | null };

/** Returns the reports not stored before. */
export async function storeReports({ query }: Unit, reports: StoredReport[]): Promise<StoredReport[]> {
  if (!reports.length) return [];
  const v = valuesList(
    reports.map((r) => [r.lineId, r.guid, r.status, new Date(r.at), r.reason?.slice(0, 500) ?? null, r.segments && r.segments > 0 ? r.segments : null]),
    ["", "", "", "::timestamptz", "", "::int"],
  );
  const rows = await query<{ lineId: string; guid: string; status: string }>(
    `INSERT INTO "DeliveryReport" ("lineId", guid, status, at, reason, segments) VALUES ${v.text}
     ON CONFLICT DO NOTHING RETURNING "lineId", guid, status`,
    v.params,
  );
  const fresh = new Set(rows.map((r) => `${r.lineId} ${r.guid} ${r.status}`));
  return reports.filter((r) => fresh.has(`${r.lineId} ${r.guid} ${r.status}`));
}

export async function applyReports(
  unit: Unit,
  keys: ReportKey[],
  url: FileUrlSigner,
  options: { segments: boolean },
): Promise<void> {
  if (!keys.length) return;
  const { query } = unit;
  const k = valuesList(keys.map((key) => [key.lineId, key.guid]));
  // Per message: its first final report by arrival (status name breaks a tie), else `sent`.
  const updated = await query<Message & { lineHandle: string }>(
    `WITH keys ("lineId", guid) AS (VALUES ${k.text}),
     chosen AS (
       SELECT DISTINCT ON (r."lineId", r.guid) r."lineId", r.guid, r.status, r.at, r.reason
       FROM "DeliveryReport" r JOIN keys USING ("lineId", guid)
       ORDER BY r."lineId", r.guid, (r.status <> 'sent') DESC, r."createdAt", r.status)
     UPDATE "Message" m SET "deliveryStatus" = c.status,
       "deliveredAt" = CASE WHEN c.status = 'delivered' THEN c.at ELSE m."deliveredAt" END,
       "deliveryError" = CASE WHEN c.status = 'delivered' THEN NULL ELSE c.reason END
     FROM chosen c
     WHERE m."lineId" = c."lineId" AND m.guid = c.guid AND m."isFromMe"
       AND (m."deliveryStatus" IS NULL OR (m."deliveryStatus" = 'sent' AND c.status <> 'sent'))
     RETURNING m.*, (SELECT handle FROM "Line" WHERE id = m."lineId") AS "lineHandle"`,
    k.params,
  );
  if (options.segments) await query(
    `WITH keys ("lineId", guid) AS (VALUES ${k.text})
     UPDATE "OutboxItem" o SET segments = s.n
     FROM (SELECT m."outboxId", max(r.segments) AS n FROM "DeliveryReport" r JOIN keys USING ("lineId", guid)
           JOIN "Message" m ON m."lineId" = r."lineId" AND m.guid = r.guid
           WHERE r.segments IS NOT NULL AND m."outboxId" IS NOT NULL GROUP BY m."outboxId") s
     WHERE o.id = s."outboxId" AND o.segments IS DISTINCT FROM s.n`,
    k.params,
  );
  unit.changed(updated.map((m) => m.accountId));
  unit.live(updated.map((m) => ({ type: "chat.activity" as const, accountId: m.accountId, lineId: m.lineId, chatId: m.chatId, kind: "delivery" as const })));
  const final = updated.filter((m) => m.deliveryStatus !== "sent");
  if (!final.length) return;
  const ids = valuesList([final.map((m) => m.id)]);
  const attachments = await query<Attachment>(`SELECT * FROM "Attachment" WHERE "messageId" IN ${ids.text}`, ids.params);
  await unit.fanOut(
    final.map(({ lineHandle, ...m }) => ({
      accountId: m.accountId,
      lineId: m.lineId,
      event: m.deliveryStatus === "delivered" ? ("message.delivered" as const) : ("message.undelivered" as const),
      data: { ...serializeMessage({ ...m, attachments: attachments.filter((a) => a.messageId === m.id) }, url), line_handle: lineHandle },
    })),
  );
}

/** Returns the reportKeys of the reports not stored before. */
export async function recordReports(unit: Unit, reports: StoredReport[], url: FileUrlSigner): Promise<Set<string>> {
  const stored = await storeReports(unit, reports);
  const keys = [...new Map(stored.map((r) => [`${r.lineId} ${r.guid}`, { lineId: r.lineId, guid: r.guid }])).values()];
  await applyReports(unit, keys, url, { segments: reports.some((r) => !!r.segments && r.segments > 0) });
  return new Set(stored.map(reportKey));
}

export const reportKey = (r: ReportKey & { status: string }) => `${r.lineId} ${r.guid} ${r.status}`;

/** Long enough for any send still waiting to record its message; after it a late repeat can only move `sent` on. */
export const DELIVERY_REPORT_RETENTION_MS = 7 * 86_400_000;
