import { resetConfig } from "@/server/kernel/config";
import { resetLogger } from "@/server/kernel/log";

/** The JSON log records written while `fn` runs (the logger at info, into memory). */
export async function captureLog<T>(fn: () => Promise<T> | T): Promise<{ result: T; records: Record<string, unknown>[] }> {
  const lines: string[] = [];
  process.env.LOG_LEVEL = "info";
  resetConfig();
  resetLogger({ write: (line: string) => void lines.push(line) });
  try {
    const result = await fn();
    return { result, records: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
  } finally {
    delete process.env.LOG_LEVEL;
    resetConfig();
    resetLogger();
  }
}
