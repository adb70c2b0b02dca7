import pino, { type DestinationStream, type Logger } from "pino";
import { config } from "../config";
import { processSingleton } from "../singleton";

// The service's log: one JSON object per line on stdout (pino), for a log shipper to read.
// Under `npm run dev` the same records print as short readable lines instead. What goes in is
// chosen by the callers: IDs, routes, statuses, durations and outcomes; never a key secret,
// password, webhook secret, message text or file bytes (the redaction below is a second line
// of defence for fields with those names, not the way secrets are kept out).

const LEVEL_NAMES: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const SKIP = new Set(["level", "time", "pid", "hostname", "msg", "err"]);

/** `12:00:01 INFO  GET /v1/chats 200 3.1ms req_… acct_…`: the dev server's view of a record. */
export function readableLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof record.time === "string" ? record.time.slice(11, 19) : "";
  const level = (LEVEL_NAMES[Number(record.level)] ?? String(record.level)).padEnd(5);
  const rest = Object.entries(record)
    .filter(([k, v]) => !SKIP.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  const err = record.err as { stack?: string; message?: string } | undefined;
  const stack = err ? `\n${err.stack ?? err.message ?? ""}` : "";
  return `${time} ${level} ${record.msg ?? ""}${rest ? ` ${rest}` : ""}${stack}\n`;
}

function readableStdout(): DestinationStream {
  return { write: (line: string) => void process.stdout.write(readableLine(line)) };
}

/**
 * stdout through an 8 KiB buffer (one write per batch of lines, not per request), flushed every
 * 250 ms and when the process exits, so a line is late by at most that and lost only on a crash
 * of the process itself (kill -9).
 */
function stdoutBuffered(): DestinationStream {
  const stream = pino.destination({ fd: 1, sync: false, minLength: 8 * 1024 });
  setInterval(() => stream.flush(), 250).unref();
  process.on("exit", () => {
    try {
      stream.flushSync();
    } catch {
      // stdout already closed
    }
  });
  return stream;
}

function createLogger(destination?: DestinationStream): Logger {
  const c = config();
  const level = c.LOG_LEVEL ?? (c.isTest ? "silent" : "info");
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Top-level names only: wildcard paths cost a walk of every record.
      redact: { paths: ["password", "secret", "authorization", "token", "text"], censor: "[redacted]" },
    },
    destination ?? (c.NODE_ENV === "development" ? readableStdout() : stdoutBuffered()),
  );
}

const state = processSingleton("logger", () => ({ logger: null as Logger | null, destination: undefined as DestinationStream | undefined }));

/** The process's logger (created on first use from LOG_LEVEL). */
export function log(): Logger {
  state.logger ??= createLogger(state.destination);
  return state.logger;
}

/** For tests: the next log() call builds the logger from the environment again, writing to `destination` if given. */
export function resetLogger(destination?: DestinationStream): void {
  state.logger = null;
  state.destination = destination;
}
