-- CreateTable
CREATE TABLE "SimulatedSend" (
    "idempotencyKey" TEXT NOT NULL,
    "guid" TEXT NOT NULL,
    "sentAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "SimulatedSend_pkey" PRIMARY KEY ("idempotencyKey")
);
