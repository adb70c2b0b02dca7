import { randomBytes } from "node:crypto";
import { getDb } from "./index";
import { processSingleton } from "../kernel/singleton";

// In the database, so every instance signs and verifies alike with no configuration.

const loads = processSingleton("instance-secrets", () => new Map<string, Promise<string>>());

/** The insert skips duplicates, so instances starting together agree on one value. */
export function instanceSecret(key: string): Promise<string> {
  let load = loads.get(key);
  if (!load) {
    load = (async () => {
      const db = await getDb();
      await db.setting.createMany({ data: [{ key, value: randomBytes(32).toString("base64url") }], skipDuplicates: true });
      return (await db.setting.findUniqueOrThrow({ where: { key } })).value;
    })().catch((err: unknown) => {
      loads.delete(key);
      throw err;
    });
    loads.set(key, load);
  }
  return load;
}
