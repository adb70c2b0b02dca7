import { randomBytes, scryptSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { getDb } from "@/server/db";
import { createAccount, verifyCredentials } from "@/server/services/accounts/accounts";
import { hashPassword, needsRehash, verifyPassword } from "./passwords";

/** A hash in the stored format, made with the parameters of an older release. */
function legacyHash(password: string, n = 2 ** 15): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32, { N: n, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${n}$8$1$${salt.toString("base64url")}$${hash.toString("base64url")}`;
}

describe("password hashing", () => {
  it("hashes with OWASP's scrypt parameters (N=2^17, r=8, p=1) recorded in the stored value", async () => {
    const stored = await hashPassword("correct horse battery");
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
    expect(await verifyPassword("wrong horse battery", stored)).toBe(false);
    expect(needsRehash(stored)).toBe(false);
  });

  it("still verifies hashes stored with older parameters, and flags them for rehashing", async () => {
    const old = legacyHash("correct horse battery");
    expect(await verifyPassword("correct horse battery", old)).toBe(true);
    expect(await verifyPassword("nope", old)).toBe(false);
    expect(needsRehash(old)).toBe(true);
  });

  it.each([
    ["", "empty"],
    ["bcrypt$10$x$y", "another algorithm"],
    ["scrypt$1000$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA", "N not a power of two"],
    ["scrypt$4194304$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA", "N too large to run"],
  ])("refuses a malformed stored hash (%s: %s) without throwing", async (stored) => {
    expect(await verifyPassword("anything at all", stored)).toBe(false);
  });

  it("rehashes a legacy hash on the next successful sign-in, and keeps it on a failed one", async () => {
    const email = `rehash-${Date.now()}@example.com`;
    await createAccount({ email, password: "correct horse battery" });
    const db = await getDb();
    const old = legacyHash("correct horse battery");
    await db.user.update({ where: { email }, data: { passwordHash: old } });

    expect(await verifyCredentials(email, "wrong password")).toBeNull();
    expect((await db.user.findUniqueOrThrow({ where: { email } })).passwordHash).toBe(old);

    expect(await verifyCredentials(email, "correct horse battery")).toMatchObject({ email });
    const upgraded = (await db.user.findUniqueOrThrow({ where: { email } })).passwordHash!;
    expect(upgraded).toMatch(/^scrypt\$131072\$8\$1\$/);
    expect(await verifyCredentials(email, "correct horse battery")).toMatchObject({ email });
  });
});
