-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "allowTo" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "maxSendsPerChatWithoutReply" INTEGER,
ADD COLUMN     "maxSendsPerDay" INTEGER,
ADD COLUMN     "requireApproval" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "Chat" ADD COLUMN     "pausedAt" TIMESTAMPTZ(3),
ADD COLUMN     "pausedBy" TEXT;

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "reviewedAt" TIMESTAMPTZ(3),
ADD COLUMN     "reviewedBy" TEXT,
ADD COLUMN     "sendAt" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "OutboxItem_apiKeyId_createdAt_idx" ON "OutboxItem"("apiKeyId", "createdAt");
