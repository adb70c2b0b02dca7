import pino, { type DestinationStream, type Logger } from "pino";
import { config } from "./config";
import { processSingleton } from "./singleton";

// One JSON object per line on stdout (pino); readable lines under `npm run dev`. Callers never log
// secrets or message text: the redaction below is only a second line of defence.

const LEVEL_NAMES: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const SKIP = new Set(["level", "time", "pid", "hostname", "msg", "err"]);

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

const BATCH_CHARS = 16 * 1024;

// One asynchronous write per ~16 KiB of lines, flushed every 250 ms and on exit (lost only on
// kill -9). Not SonicBoom's minLength: it measures the whole pending buffer on every line, which
// cost several times the write itself (npm run bench, observability).
export class LineBatch implements DestinationStream {
  private lines: string[] = [];
  private chars = 0;

  constructor(private readonly out: { write(chunk: string): unknown; flushSync?(): void; flush?(cb: (err?: Error) => void): void }) {}

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_CHARS) this.flush();
  }

  flush(): void {
    if (this.lines.length === 0) return;
    const chunk = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
    this.lines = [];
    this.chars = 0;
    this.out.write(chunk);
  }

  flushSync(): void {
    this.flush();
    this.out.flushSync?.();
  }

  /** Resolves once every line so far is written (the ready banner before the start script's "Ready"). */
  settle(): Promise<void> {
    this.flush();
    return new Promise((resolve) => (this.out.flush ? this.out.flush(() => resolve()) : resolve()));
  }
}

function stdoutBuffered(): DestinationStream {
  // minLength 1 writes as at once as 0 does, and lets flush(cb) wait for the write (settle).
  const batch = new LineBatch(pino.destination({ fd: 1, sync: false, minLength: 1 }));
  setInterval(() => batch.flush(), 250).unref();
  process.on("exit", () => {
    try {
      batch.flushSync();
    } catch {
      // stdout already closed
    }
  });
  return batch;
}

/** The time as an ISO string; the date part is formatted once a second, not once a line. */
let isoSecond = -1;
let isoPrefix = "";
function isoNow(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  const ms = now - second * 1000;
  return `${isoPrefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
}

function createLogger(destination: DestinationStream): Logger {
  const c = config();
  const level = c.LOG_LEVEL ?? (c.isTest ? "silent" : "info");
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: () => `,"time":"${isoNow()}"`,
      // Top-level names only: wildcard paths cost a walk of every record.
      redact: { paths: ["password", "secret", "authorization", "token", "text"], censor: "[redacted]" },
    },
    destination,
  );
}

const state = processSingleton("logger", () => ({
  logger: null as Logger | null,
  destination: undefined as DestinationStream | undefined,
  stream: null as DestinationStream | null,
  stdout: null as DestinationStream | null,
  /** The level of a request answered below 400: debug under `next dev`, which prints its own line for each. */
  routineRequestLevel: 30,
}));

export function log(): Logger {
  if (!state.logger) {
    const development = config().NODE_ENV === "development";
    state.stream = state.destination ?? (development ? readableStdout() : (state.stdout ??= stdoutBuffered()));
    state.routineRequestLevel = development ? 20 : 30;
    state.logger = createLogger(state.stream);
  }
  return state.logger;
}

/** Waits until the log's lines so far are written out. */
export async function logSettled(): Promise<void> {
  await (state.stream as { settle?: () => Promise<void> } | null)?.settle?.();
}

export interface RequestRecord {
  request_id: string;
  method: string;
  route: string;
  path: string | undefined;
  status: number;
  duration_ms: number;
  account_id: string | undefined;
  key_id: string | undefined;
}

const str = JSON.stringify;

/** The JSON `log().info(record, "request")` would write, by hand since it runs per request; nothing in it needs redacting. */
export function logRequest(r: RequestRecord): void {
  const logger = log();
  const level = r.status >= 500 ? 50 : r.status >= 400 ? 30 : state.routineRequestLevel;
  if (logger.levelVal > level) return;
  let line = `{"level":${level},"time":"${isoNow()}","pid":${process.pid},"request_id":${str(r.request_id)},"method":${str(r.method)},"route":${str(r.route)}`;
  if (r.path !== undefined) line += `,"path":${str(r.path)}`;
  line += `,"status":${r.status},"duration_ms":${r.duration_ms}`;
  if (r.account_id !== undefined) line += `,"account_id":${str(r.account_id)}`;
  if (r.key_id !== undefined) line += `,"key_id":${str(r.key_id)}`;
  state.stream!.write(`${line},"msg":"request"}\n`);
}

export function resetLogger(destination?: DestinationStream): void {
  state.logger = null;
  state.stream = null;
  state.destination = destination;
}
