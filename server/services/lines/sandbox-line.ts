import { config } from "../../kernel/config";
import { getDb } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { newId } from "../../kernel/ids";

// Its own module, below both lines.ts and tenancy.ts, which each need it.

let sandboxLinePromise: Promise<Line> | undefined;

export function sandboxLine(): Promise<Line> {
  sandboxLinePromise ??= (async () => {
    const db = await getDb();
    const handle = normalizeHandle(config().SANDBOX_LINE_HANDLE);
    const existing = await db.line.findFirst({ where: { isSandbox: true } });
    if (existing) {
      if (existing.handle === handle) return existing;
      return db.line.update({ where: { id: existing.id }, data: { handle } });
    }
    try {
      return await db.line.upsert({
        where: { handle },
        create: { id: newId("line"), handle, label: "Sandbox", service: "imessage", advancedFeatures: true, isSandbox: true },
        update: {},
      });
    } catch (err) {
      // Instances starting together on a fresh database race to create it (the upsert reads,
      // then inserts): the one that lost reads the winner's.
      if ((err as { code?: string }).code !== "P2002") throw err;
      return db.line.findUniqueOrThrow({ where: { handle } });
    }
  })().catch((err: unknown) => {
    sandboxLinePromise = undefined;
    throw err;
  });
  return sandboxLinePromise;
}
