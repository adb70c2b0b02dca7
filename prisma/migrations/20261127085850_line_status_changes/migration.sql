-- CreateTable
CREATE TABLE "LineStatusChange" (
    "id" BIGSERIAL NOT NULL,
    "lineId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "previousStatus" TEXT NOT NULL,
    "reason" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "LineStatusChange_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "LineStatusChange_accountId_at_idx" ON "LineStatusChange"("accountId", "at");

-- CreateIndex
CREATE INDEX "LineStatusChange_at_idx" ON "LineStatusChange"("at");

-- CreateIndex
CREATE INDEX "OutboxItem_accountId_completedAt_idx" ON "OutboxItem"("accountId", "completedAt");

-- AddForeignKey
ALTER TABLE "LineStatusChange" ADD CONSTRAINT "LineStatusChange_lineId_fkey" FOREIGN KEY ("lineId") REFERENCES "Line"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "LineStatusChange" ADD CONSTRAINT "LineStatusChange_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;
