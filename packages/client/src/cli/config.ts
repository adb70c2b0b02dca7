import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

// Flags, then RELAY_API_KEY / RELAY_BASE_URL, then the file `relay login` writes (mode 600).

export interface CliConfig {
  apiKey?: string;
  baseUrl?: string;
  /** One per server and key, as `stripe listen` keeps one per login; the key itself never appears in the name. */
  listenSecrets?: Record<string, string>;
}

export const DEFAULT_BASE_URL = "http://localhost:3000";

export function configDir(env: Record<string, string | undefined>): string {
  return env.RELAY_CONFIG_DIR ?? path.join(env.XDG_CONFIG_HOME ?? path.join(os.homedir(), ".config"), "relay");
}

export async function readConfig(dir: string): Promise<CliConfig> {
  try {
    return JSON.parse(await readFile(path.join(dir, "config.json"), "utf8")) as CliConfig;
  } catch {
    return {};
  }
}

export async function writeConfig(dir: string, config: CliConfig): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, "config.json");
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600); // also when the file existed with wider permissions
  return file;
}

export async function removeConfig(dir: string): Promise<string | null> {
  const file = path.join(dir, "config.json");
  try {
    await rm(file);
    return file;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

function listenSlot(baseUrl: string, apiKey: string): string {
  let end = baseUrl.length;
  while (end > 0 && baseUrl[end - 1] === "/") end--;
  return `${baseUrl.slice(0, end)} ${createHash("sha256").update(apiKey).digest("hex").slice(0, 16)}`;
}

export async function listenSecret(dir: string, baseUrl: string, apiKey: string, options: { rotate?: boolean } = {}): Promise<{ secret: string; created: boolean }> {
  const config = await readConfig(dir);
  const slot = listenSlot(baseUrl, apiKey);
  const saved = config.listenSecrets?.[slot];
  if (saved && !options.rotate) return { secret: saved, created: false };
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  await writeConfig(dir, { ...config, listenSecrets: { ...config.listenSecrets, [slot]: secret } });
  return { secret, created: true };
}
