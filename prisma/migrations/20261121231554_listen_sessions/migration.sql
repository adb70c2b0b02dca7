-- AlterTable
ALTER TABLE "Webhook" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'http',
ADD COLUMN     "lastSeenAt" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "Webhook_kind_lastSeenAt_idx" ON "Webhook"("kind", "lastSeenAt");
