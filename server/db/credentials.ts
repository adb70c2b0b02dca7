import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { secureDataDir } from "./data-dir";
import path from "node:path";
import { config } from "../kernel/config";
import { processSingleton } from "../kernel/singleton";

// AES-256-GCM under CREDENTIALS_KEY, else a key generated once into DATA_DIR/credentials.key:
// instances on several machines must share one CREDENTIALS_KEY.

export const CREDENTIALS_KEY_FILE = "credentials.key";
const VERSION = "v1";
/** Sealed with associated data (encryptJson's context). */
const BOUND_VERSION = "v2";

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

export function credentialsKeySource(): KeyState["source"] {
  return currentKey().source;
}

export function resetCredentialsKey(): void {
  state.current = null;
}

/** "v1.<iv>.<tag>.<ciphertext>"; with `context`, "v2.…" bound to it as associated data (a line's ID, provider, destination). */
export function encryptJson(value: unknown, context?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", currentKey().key, iv);
  if (context !== undefined) cipher.setAAD(Buffer.from(context, "utf8"));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
  return [context === undefined ? VERSION : BOUND_VERSION, iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")].join(".");
}

export class CredentialsError extends Error {}

/** Whether a sealed value predates context binding (v1): it is read, and sealed again bound. */
export function isUnboundSealed(sealed: string): boolean {
  return sealed.startsWith(`${VERSION}.`);
}

/** A v2 value under another context (copied to another line, or its destination changed) throws CredentialsError. */
export function decryptJson(sealed: string, context?: string): unknown {
  const [version, iv, tag, body] = sealed.split(".");
  if ((version !== VERSION && version !== BOUND_VERSION) || !iv || !tag || body === undefined) throw new CredentialsError("stored credentials are not in a known format");
  if (version === BOUND_VERSION && context === undefined) throw new CredentialsError("stored credentials are bound to a line: read them with its context");
  try {
    const decipher = createDecipheriv("aes-256-gcm", currentKey().key, Buffer.from(iv, "base64url"));
    if (version === BOUND_VERSION) decipher.setAAD(Buffer.from(context!, "utf8"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    const text = Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
    return JSON.parse(text) as unknown;
  } catch {
    throw new CredentialsError(
      version === BOUND_VERSION
        ? "stored credentials cannot be decrypted for this line as it is set up (another CREDENTIALS_KEY, or the line's provider or address changed without its credentials); connect the line again"
        : "stored credentials cannot be decrypted with this instance's CREDENTIALS_KEY (was the key changed, or do instances use different keys?); connect the line again",
    );
  }
}
