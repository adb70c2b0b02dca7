import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

// Where the CLI finds its key and base URL: flags, then RELAY_API_KEY / RELAY_BASE_URL, then
// the config file written by `relay login` (mode 600, in $RELAY_CONFIG_DIR or ~/.config/relay).

export interface CliConfig {
  apiKey?: string;
  baseUrl?: string;
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

/** Deletes the config file; its path, or null when there was none. */
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
