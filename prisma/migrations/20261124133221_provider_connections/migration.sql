-- AlterTable
ALTER TABLE "Chat" ADD COLUMN     "providerChatId" TEXT;

-- AlterTable
ALTER TABLE "Line" ADD COLUMN     "capabilities" JSONB,
ADD COLUMN     "catchupAfter" TIMESTAMPTZ(3),
ADD COLUMN     "failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "inboundTokenHash" TEXT,
ADD COLUMN     "lastEventAt" TIMESTAMPTZ(3),
ADD COLUMN     "lastProbeAt" TIMESTAMPTZ(3),
ADD COLUMN     "nextSendAt" TIMESTAMPTZ(3),
ADD COLUMN     "providerSecrets" TEXT,
ADD COLUMN     "providerSettings" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "sendRatePerSecond" DOUBLE PRECISION NOT NULL DEFAULT 1,
ADD COLUMN     "status" TEXT NOT NULL DEFAULT 'connected',
ADD COLUMN     "statusChangedAt" TIMESTAMPTZ(3),
ADD COLUMN     "statusReason" TEXT;

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "attemptStartedAt" TIMESTAMPTZ(3),
ADD COLUMN     "service" TEXT,
ADD COLUMN     "unknownSince" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "ProviderEvent" (
    "lineId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProviderEvent_pkey" PRIMARY KEY ("lineId","key")
);

-- CreateIndex
CREATE INDEX "ProviderEvent_createdAt_idx" ON "ProviderEvent"("createdAt");

-- CreateIndex
CREATE INDEX "OutboxItem_lineId_status_id_idx" ON "OutboxItem"("lineId", "status", "id");
