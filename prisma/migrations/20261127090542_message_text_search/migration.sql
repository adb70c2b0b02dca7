-- Full-text search over message text (GET /v1/messages?query=). A stored generated column, so
-- the database computes it on every insert whichever writer inserts, and a search reads it
-- instead of recomputing to_tsvector per row. 'simple': no stemming and no stop words, the
-- same for every language a line's contacts write in; PGlite has the same configuration.
-- AlterTable
ALTER TABLE "Message" ADD COLUMN "textSearch" tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, COALESCE("text", ''))) STORED;

-- CreateIndex
CREATE INDEX "Message_textSearch_idx" ON "Message" USING GIN ("textSearch");
