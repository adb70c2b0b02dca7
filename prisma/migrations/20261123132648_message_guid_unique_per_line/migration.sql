-- DropIndex
DROP INDEX "Message_guid_key";

-- CreateIndex
CREATE INDEX "Message_accountId_guid_idx" ON "Message"("accountId", "guid");

-- CreateIndex
CREATE UNIQUE INDEX "Message_lineId_guid_key" ON "Message"("lineId", "guid");
