import { defineConfig } from "prisma/config";

// The datasource URL is only needed by Prisma CLI commands that talk to a database; this
// project applies migrations with its own scripts (scripts/migrate.ts), so none is required.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
});
