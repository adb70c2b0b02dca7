-- AlterTable
ALTER TABLE "Line" ADD COLUMN     "sendPolicy" JSONB NOT NULL DEFAULT '{}';

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "fallback" BOOLEAN;

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "canceledAt" TIMESTAMPTZ(3),
ADD COLUMN     "fallback" BOOLEAN,
ADD COLUMN     "holdReason" TEXT,
ADD COLUMN     "poolId" TEXT,
ADD COLUMN     "releasedAt" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "SimulatedReachability" (
    "lineHandle" TEXT NOT NULL,
    "handle" TEXT NOT NULL,
    "imessage" BOOLEAN NOT NULL,

    CONSTRAINT "SimulatedReachability_pkey" PRIMARY KEY ("lineHandle","handle")
);

-- CreateTable
CREATE TABLE "Pool" (
    "id" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "turn" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Pool_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PoolLine" (
    "poolId" TEXT NOT NULL,
    "lineId" TEXT NOT NULL,
    "addedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PoolLine_pkey" PRIMARY KEY ("poolId","lineId")
);

-- CreateTable
CREATE TABLE "ContactOpening" (
    "lineId" TEXT NOT NULL,
    "chatId" TEXT NOT NULL,
    "outboxId" TEXT NOT NULL,
    "openedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ContactOpening_pkey" PRIMARY KEY ("lineId","chatId")
);

-- CreateTable
CREATE TABLE "Reachability" (
    "lineId" TEXT NOT NULL,
    "handle" TEXT NOT NULL,
    "imessage" BOOLEAN NOT NULL,
    "checkedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Reachability_pkey" PRIMARY KEY ("lineId","handle")
);

-- CreateIndex
CREATE INDEX "Pool_accountId_id_idx" ON "Pool"("accountId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "Pool_accountId_name_key" ON "Pool"("accountId", "name");

-- CreateIndex
CREATE INDEX "PoolLine_lineId_idx" ON "PoolLine"("lineId");

-- CreateIndex
CREATE INDEX "ContactOpening_lineId_openedAt_idx" ON "ContactOpening"("lineId", "openedAt");

-- CreateIndex
CREATE INDEX "ContactOpening_outboxId_idx" ON "ContactOpening"("outboxId");

-- AddForeignKey
ALTER TABLE "Pool" ADD CONSTRAINT "Pool_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PoolLine" ADD CONSTRAINT "PoolLine_poolId_fkey" FOREIGN KEY ("poolId") REFERENCES "Pool"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PoolLine" ADD CONSTRAINT "PoolLine_lineId_fkey" FOREIGN KEY ("lineId") REFERENCES "Line"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ContactOpening" ADD CONSTRAINT "ContactOpening_lineId_fkey" FOREIGN KEY ("lineId") REFERENCES "Line"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Reachability" ADD CONSTRAINT "Reachability_lineId_fkey" FOREIGN KEY ("lineId") REFERENCES "Line"("id") ON DELETE CASCADE ON UPDATE CASCADE;
