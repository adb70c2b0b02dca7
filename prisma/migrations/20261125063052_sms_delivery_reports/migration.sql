-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "deliveredAt" TIMESTAMPTZ(3),
ADD COLUMN     "deliveryError" TEXT,
ADD COLUMN     "deliveryStatus" TEXT;

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "segments" INTEGER;

-- CreateTable
CREATE TABLE "DeliveryReport" (
    "lineId" TEXT NOT NULL,
    "guid" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "reason" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeliveryReport_pkey" PRIMARY KEY ("lineId","guid","status")
);

-- CreateTable
CREATE TABLE "OptOut" (
    "lineId" TEXT NOT NULL,
    "handle" TEXT NOT NULL,
    "optedOutAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OptOut_pkey" PRIMARY KEY ("lineId","handle")
);

-- CreateIndex
CREATE INDEX "DeliveryReport_createdAt_idx" ON "DeliveryReport"("createdAt");
