-- AlterTable
ALTER TABLE "Chat" ADD COLUMN     "lastReadAt" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "chatId" TEXT,
ADD COLUMN     "retryOf" TEXT;

-- CreateIndex
CREATE INDEX "Chat_accountId_lastMessageAt_id_idx" ON "Chat"("accountId", "lastMessageAt" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "OutboxItem_chatId_status_idx" ON "OutboxItem"("chatId", "status");

-- CreateIndex
CREATE INDEX "OutboxItem_retryOf_idx" ON "OutboxItem"("retryOf");

-- Items stored before the column: their chat is in the payload.
UPDATE "OutboxItem" SET "chatId" = payload->>'chat_id' WHERE "chatId" IS NULL;

-- Chats that existed before the read marker start read: only what arrives from now on is unread.
UPDATE "Chat" SET "lastReadAt" = COALESCE("lastMessageAt", "createdAt") WHERE "lastReadAt" IS NULL;
