import { expect, it } from "vitest";
import { getDb } from "../db";
import { fileUrlSigner, loadSigningSecret, verifyFileUrl } from "./signed-urls";

it("concurrent first uses of the signing key agree on one key and never fail", async () => {
  // A fresh database: the key does not exist yet, and twenty requests need it at once
  // (this raced on PostgreSQL: Setting_pkey unique violation, a 500).
  const keys = await Promise.all(Array.from({ length: 20 }, () => loadSigningSecret()));
  expect(new Set(keys.map((k) => k.toString("hex"))).size).toBe(1);
  const db = await getDb();
  expect(await db.setting.count({ where: { key: "url_signing_secret" } })).toBe(1);
  const url = new URL((await fileUrlSigner())("file_x"));
  expect(await verifyFileUrl("file_x", url.searchParams.get("expires"), url.searchParams.get("signature"))).toBe(true);
});
