-- GET /v1/outbox?hold_reason=: a list of one reason's held items, newest first, for one line or a
-- whole account, read from an index of the held rows only (partial, so the sends that are never
-- held pay nothing for it). A scheduled send stored before reasons were had none: it is named.
UPDATE "OutboxItem" SET "holdReason" = 'scheduled' WHERE status = 'held' AND "holdReason" IS NULL;

-- CreateIndex
CREATE INDEX "OutboxItem_held_account_idx" ON "OutboxItem" ("accountId", "holdReason", id DESC) WHERE status = 'held';

-- CreateIndex
CREATE INDEX "OutboxItem_held_line_idx" ON "OutboxItem" ("lineId", "holdReason", id DESC) WHERE status = 'held';
