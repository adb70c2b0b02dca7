-- Existing records were shared by every key of an account and may hold webhook secrets in
-- their stored responses: they are dropped (they would have expired within 24 hours).
DELETE FROM "IdempotencyRecord";

-- DropIndex
DROP INDEX "IdempotencyRecord_accountId_key_key";

-- AlterTable
ALTER TABLE "IdempotencyRecord" ADD COLUMN     "apiKeyId" TEXT NOT NULL,
ADD COLUMN     "secretDigest" TEXT;

-- AlterTable
ALTER TABLE "Webhook" ADD COLUMN     "apiKeyId" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "IdempotencyRecord_apiKeyId_key_key" ON "IdempotencyRecord"("apiKeyId", "key");
