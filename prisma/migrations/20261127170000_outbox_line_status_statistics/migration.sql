-- The planner's estimate of how many outbox items a line has in one status assumed the two
-- independent: with 100,000 items held on one line it expected every line to hold a share of
-- them, and read the whole table (through the primary key, or sequentially) to count or find
-- a line's held items, even for a line that holds none (46 ms per GET /v1/capacity). A
-- multivariate MCV list gives it the real frequency of each (line, status) pair; ANALYZE
-- (autovacuum on PostgreSQL) keeps it current. Prisma's schema has no way to say this, and its
-- diff ignores statistics objects.
CREATE STATISTICS IF NOT EXISTS "OutboxItem_lineId_status_stats" (mcv) ON "lineId", status FROM "OutboxItem";
