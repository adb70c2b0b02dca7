import { readFile } from "node:fs/promises";
import path from "node:path";
import type { parseArgs } from "node:util";
import type { Style } from "./ui.js";

export const EXIT = {
  ok: 0,
  apiError: 1,
  usage: 2,
  auth: 3,
  /** Network failure, or a wait that ended with the send still pending (held, or not sent within it). */
  network: 4,
  deliveryFailed: 5,
  /** Ctrl-C during a wait (listen and messages --follow end with 0: that is how they stop). */
  interrupted: 130,
} as const;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  stdin?: AsyncIterable<Uint8Array | string>;
  /** For the API (tests pass an in-process one); forwarding in `listen` uses the global fetch. */
  fetch?: typeof fetch;
  signal?: AbortSignal;
  color?: boolean;
  interactive?: boolean;
}

export class UsageError extends Error {}

export const REACTION_TYPES = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
export const isReactionType = (t: string): t is (typeof REACTION_TYPES)[number] => (REACTION_TYPES as readonly string[]).includes(t);

export const COMMANDS: Record<string, { usage: string[]; about: string }> = {
  login: { usage: ["login --key sk_live_... [--base-url URL]"], about: "Checks the key and saves it with the base URL in the config file (mode 600)." },
  logout: { usage: ["logout"], about: "Deletes the config file that login wrote (the key itself stays valid: revoke it in the dashboard)." },
  lines: { usage: ["lines"], about: "The lines this key can use." },
  pools: { usage: ["pools"], about: "The account's sender pools: a pool_ ID works as --from of send, which then picks the line per contact." },
  capacity: {
    usage: ["capacity LINE_OR_POOL"],
    about:
      "What a line (handle or ln_ ID), or each line of a pool (pool_ ID), can still send: its new-contact budgets per sliding hour and day (used/limit), quiet hours, the pending sends that wait and why, and when a send to a new contact could next go.",
  },
  chats: {
    usage: ["chats --from LINE", "chats pause CHAT_ID", "chats resume CHAT_ID"],
    about:
      "Chats of a line, most recent first. pause stops automated sending in a chat (human takeover): keys with guardrails are refused with chat_paused until resume; your own sends still go. pause and resume need the outbox:approve scope.",
  },
  messages: {
    usage: ["messages --from LINE [--to CHAT] [--follow]"],
    about: "Messages, newest first. --follow prints the latest (oldest first) and then each new message as it arrives, until Ctrl-C.",
  },
  send: {
    usage: ["send --from LINE --to CONTACT [--text T] [--attach FILE] [--audio FILE] [--reply-to MSG] [--at TIME] [--wait]"],
    about:
      "Sends a message (--audio: a voice memo, alone). --at schedules it: an ISO time with its zone (2026-12-01T09:00:00Z, 2026-12-01T09:00+01:00), Unix ms, or a delay from now (+30s, +10m, +2h, +1d); in the future, at most 365 days ahead. --wait follows it until sent or failed (exit 5 when failed); a send held for approval, or until after the wait, ends the wait at once with what it waits for (exit 4).",
  },
  outbox: {
    usage: [
      "outbox list [--from LINE] [--status S] [--hold REASON]",
      "outbox get OBX_ID [--wait]",
      "outbox cancel OBX_ID",
      "outbox reschedule OBX_ID --at TIME",
      "outbox approve OBX_ID",
      "outbox reject OBX_ID",
    ],
    about:
      "Outbox items. list shows the latest, newest first (--hold approval: the sends waiting for your approval). get shows one; --wait until it is sent or failed. cancel calls off a pending one (it ends failed, error canceled); reschedule moves its send to --at (as for send). approve lets a send held for approval go; reject declines it (it ends failed, error rejected). approve and reject need the outbox:approve scope.",
  },
  react: { usage: ["react --from LINE --to CONTACT --message MSG --type love|like|dislike|laugh|emphasize|question [--wait]"], about: "Reacts to a message." },
  typing: { usage: ["typing --from LINE --to CONTACT [--off]"], about: "Starts (or stops) the typing indicator." },
  read: { usage: ["read --from LINE --to CONTACT"], about: "Marks the chat read." },
  files: { usage: ["files upload FILE"], about: "Uploads a file; prints its file_ ID." },
  webhooks: {
    usage: ["webhooks list [--from LINE]", "webhooks create --from LINE --url URL --events a,b", "webhooks delete ID", "webhooks deliveries WEBHOOK_ID", "webhooks resend --id DLV | --webhook WEBHOOK_ID --since ISO_OR_MS"],
    about: "Manages webhooks and their deliveries.",
  },
  sandbox: { usage: ["sandbox status", "sandbox activate [--wait]"], about: "The sandbox; activate shows a QR code and the text to send from your phone (--wait: until paired)." },
  listen: {
    usage: ["listen --forward-to URL [--from LINE] [--events a,b] [--rotate-secret]", "listen --print-secret [--rotate-secret]"],
    about:
      "Receives this key's events live and POSTs each to a local URL, signed with a local secret (like stripe listen). The secret is kept in the config file, one per server and key, so it stays the same from run to run: --print-secret shows it, --rotate-secret replaces it. Reconnects by itself; Ctrl-C stops.",
  },
  mcp: {
    usage: ["mcp"],
    about:
      "Serves the server's MCP tools (send, read, wait for a reply...) on stdin and stdout, for desktop agent apps: configure the command `relay mcp` as a stdio MCP server. Uses the saved login (or --key, --base-url), so the agent gets that key's scopes and guardrails. Runs until stdin closes; stdout carries only MCP messages, notes go to stderr.",
  },
};

const GLOBAL_HELP = `Global: --key, --base-url (or RELAY_API_KEY, RELAY_BASE_URL), --json, --limit N, --help
Exit codes: 0 ok, 1 API error, 2 usage, 3 authentication, 4 network or timeout, 5 delivery failed, 130 interrupted`;

export function help(command?: string): string {
  const one = command && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (one) return `${one.usage.map((u) => `Usage: relay ${u}`).join("\n")}\n\n${one.about}\n\n${GLOBAL_HELP}`;
  const rows = Object.values(COMMANDS).flatMap(({ usage }) => usage);
  return `relay - the Relay messaging API from your terminal\n\nUsage: relay <command> [options]\n\n${rows.map((u) => `  ${u}`).join("\n")}\n\nRun \`relay <command> --help\` for one command.\n${GLOBAL_HELP}`;
}

export const OPTIONS = {
  key: { type: "string" },
  "base-url": { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  from: { type: "string" },
  to: { type: "string" },
  text: { type: "string" },
  attach: { type: "string" },
  audio: { type: "string" },
  "reply-to": { type: "string" },
  wait: { type: "boolean" },
  follow: { type: "boolean", short: "f" },
  limit: { type: "string" },
  "forward-to": { type: "string" },
  "print-secret": { type: "boolean" },
  "rotate-secret": { type: "boolean" },
  events: { type: "string" },
  message: { type: "string" },
  type: { type: "string" },
  off: { type: "boolean" },
  url: { type: "string" },
  id: { type: "string" },
  webhook: { type: "string" },
  since: { type: "string" },
  at: { type: "string" },
  status: { type: "string" },
  hold: { type: "string" },
} as const;

export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

export function table(rows: Record<string, unknown>[], columns: string[], ui?: Style): string {
  if (!rows.length) return "(none)";
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? "" : String(r[c]).replace(/\s+/g, " "))));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((row) => row[i]!.length))));
  const fit = (v: string, i: number) => (v.length > widths[i]! ? `${v.slice(0, widths[i]! - 1)}…` : v.padEnd(widths[i]!));
  const statusColumn = columns.findIndex((c) => c === "status" || c === "active");
  const line = (values: string[], header = false) =>
    values
      .map((v, i) => {
        const cell = fit(v, i);
        if (!ui) return cell;
        if (header) return ui.bold(cell);
        return i === statusColumn ? cell.replace(v, ui.status(v)) : cell;
      })
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase()), true), ...cells.map((row) => line(row))].join("\n");
}

export const time = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "");

const DELAY_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MAX_AHEAD_MS = 365 * 86_400_000;
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?$/i;

/** An ISO 8601 date and time, checked field by field (Date.parse turns 2026-02-30 into March 2). */
function isoTime(flag: string, value: string, match: RegExpExecArray): number {
  const [, y, mo, d, h, mi, s = "0", fraction = "", zone] = match;
  if (!zone) throw new UsageError(`${flag} ${value} has no time zone: add Z (UTC) or an offset such as +01:00`);
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, "0")));
  const back = new Date(wall);
  const real =
    back.getUTCFullYear() === year && back.getUTCMonth() === month - 1 && back.getUTCDate() === day && back.getUTCHours() === hour && back.getUTCMinutes() === minute && back.getUTCSeconds() === second;
  const [offsetHours, offsetMinutes] = zone.toUpperCase() === "Z" ? [0, 0] : zone.slice(1).split(":").map(Number) as [number, number];
  if (!real || offsetHours > 23 || offsetMinutes > 59) throw new UsageError(`${flag} ${value} is not a real date and time`);
  return wall - (zone.startsWith("-") ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/** An ISO time with its zone, Unix ms, or a delay (+30s, +10m, +2h, +1d); anything else is a usage error naming the flag, before any request. */
export function sendAtOf(raw: string, now = Date.now(), flag = "--at"): number {
  const value = raw.trim();
  const delay = /^\+(\d{1,7})([smhd])$/.exec(value);
  const iso = ISO_TIME.exec(value);
  let at: number;
  if (delay) at = now + Number(delay[1]) * DELAY_UNIT_MS[delay[2] as keyof typeof DELAY_UNIT_MS];
  else if (iso) at = isoTime(flag, value, iso);
  else if (/^\d{1,15}$/.test(value)) {
    at = Number(value);
    if (at < 1e11) throw new UsageError(`${flag} ${value} looks like Unix seconds: it takes milliseconds (${value}000)`);
  } else {
    throw new UsageError(`${flag} must be an ISO time with its zone (2026-12-01T09:00:00Z, 2026-12-01T09:00+01:00), Unix ms, or a delay from now (+30s, +10m, +2h, +1d), not '${value}'`);
  }
  if (at <= now) throw new UsageError(`${flag} ${value} is not in the future (${time(at)} UTC; it is now ${time(now)} UTC)`);
  if (at > now + MAX_AHEAD_MS) throw new UsageError(`${flag} ${value} is more than 365 days ahead`);
  return at;
}

export function need(values: Values, name: keyof Values & string): string {
  const value = values[name];
  if (typeof value !== "string" || !value) throw new UsageError(`--${name} is required`);
  return value;
}

export function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  const n = Number(values.limit);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError("--limit must be an integer from 1 to 100");
  return n;
}

export async function fileArg(file: string): Promise<{ bytes: Uint8Array; filename: string }> {
  try {
    return { bytes: new Uint8Array(await readFile(file)), filename: path.basename(file) };
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

export function recentIds(limit = 10_000) {
  const ids = new Set<string>();
  return {
    has: (id: string) => ids.has(id),
    add(id: string) {
      ids.add(id);
      if (ids.size > limit) ids.delete(ids.values().next().value!);
    },
  };
}
