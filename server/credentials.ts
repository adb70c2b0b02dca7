import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { secureDataDir } from "./db/data-dir";
import path from "node:path";
import { config } from "./config";
import { processSingleton } from "./singleton";

// Provider credentials (passwords, tokens) are encrypted at rest with AES-256-GCM under
// CREDENTIALS_KEY. Without it, a key is generated once into DATA_DIR/credentials.key (mode
// 0600), so `npm run dev` needs no setup and the operator CLI, which reads the same DATA_DIR,
// encrypts alike. Several instances must share one CREDENTIALS_KEY: a key generated on one
// machine's disk is not on the others'.

export const CREDENTIALS_KEY_FILE = "credentials.key";
const VERSION = "v1";

interface KeyState {
  key: Buffer;
  source: "env" | "file" | "generated" | "memory";
}

const state = processSingleton<{ current: KeyState | null }>("credentials-key", () => ({ current: null }));

function deriveKey(material: string): Buffer {
  return createHash("sha256").update(material, "utf8").digest();
}

function loadKey(): KeyState {
  const c = config();
  if (c.CREDENTIALS_KEY) return { key: deriveKey(c.CREDENTIALS_KEY), source: "env" };
  if (!c.dataDir) return { key: randomBytes(32), source: "memory" };
  const file = path.join(/*turbopackIgnore: true*/ c.dataDir, CREDENTIALS_KEY_FILE);
  try {
    return { key: deriveKey(readFileSync(file, "utf8").trim()), source: "file" };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  secureDataDir(c.dataDir);
  const material = randomBytes(32).toString("base64url");
  try {
    // "wx": two processes starting at once never overwrite each other's key.
    writeFileSync(file, `${material}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    return { key: deriveKey(material), source: "generated" };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return { key: deriveKey(readFileSync(file, "utf8").trim()), source: "file" };
  }
}

function currentKey(): KeyState {
  state.current ??= loadKey();
  return state.current;
}

/** Where the key came from: for the start-up warning when CREDENTIALS_KEY is unset. */
export function credentialsKeySource(): KeyState["source"] {
  return currentKey().source;
}

/** For tests that change CREDENTIALS_KEY or DATA_DIR. */
export function resetCredentialsKey(): void {
  state.current = null;
}

/** Encrypts a JSON value: "v1.<iv>.<tag>.<ciphertext>", base64url parts. */
export function encryptJson(value: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", currentKey().key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
  return [VERSION, iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")].join(".");
}

export class CredentialsError extends Error {}

/** Decrypts what encryptJson made; throws CredentialsError when the key is not the one it was made with. */
export function decryptJson(sealed: string): unknown {
  const [version, iv, tag, body] = sealed.split(".");
  if (version !== VERSION || !iv || !tag || body === undefined) throw new CredentialsError("stored credentials are not in a known format");
  try {
    const decipher = createDecipheriv("aes-256-gcm", currentKey().key, Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    const text = Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
    return JSON.parse(text) as unknown;
  } catch {
    throw new CredentialsError(
      "stored credentials cannot be decrypted with this instance's CREDENTIALS_KEY (was the key changed, or do instances use different keys?); connect the line again",
    );
  }
}
