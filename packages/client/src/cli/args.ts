import { readFile } from "node:fs/promises";
import path from "node:path";
import type { parseArgs } from "node:util";
import type { Style } from "./ui.js";

// The \`relay\` command's table of commands and options, its exit codes, and the helpers that read
// arguments and print tables (run.ts runs the commands).

export const EXIT = {
  ok: 0,
  /** The API refused the request (validation, not found, rate limit, server error). */
  apiError: 1,
  /** Bad command line. */
  usage: 2,
  /** No key, or the key was refused. */
  auth: 3,
  /** Network failure or a wait that timed out. */
  network: 4,
  /** The message was accepted but ended `failed`. */
  deliveryFailed: 5,
  /** Ctrl-C during a wait (listen and messages --follow end with 0: that is how they stop). */
  interrupted: 130,
} as const;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  /** For the API (tests pass an in-process one); forwarding in `listen` uses the global fetch. */
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** Colour stdout (a TTY, NO_COLOR unset): see colorWanted. */
  color?: boolean;
  /** stderr is a TTY: spinners instead of progress lines. */
  interactive?: boolean;
}

export class UsageError extends Error {}

export const REACTION_TYPES = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
export const isReactionType = (t: string): t is (typeof REACTION_TYPES)[number] => (REACTION_TYPES as readonly string[]).includes(t);

/** Each command's usage and what it does: `relay --help` lists them, `relay CMD --help` shows one. */
export const COMMANDS: Record<string, { usage: string[]; about: string }> = {
  login: { usage: ["login --key sk_live_... [--base-url URL]"], about: "Checks the key and saves it with the base URL in the config file (mode 600)." },
  logout: { usage: ["logout"], about: "Deletes the config file that login wrote (the key itself stays valid: revoke it in the dashboard)." },
  lines: { usage: ["lines"], about: "The lines this key can use." },
  chats: { usage: ["chats --from LINE"], about: "Chats of a line, most recent first." },
  messages: {
    usage: ["messages --from LINE [--to CHAT] [--follow]"],
    about: "Messages, newest first. --follow prints the latest (oldest first) and then each new message as it arrives, until Ctrl-C.",
  },
  send: {
    usage: ["send --from LINE --to CONTACT [--text T] [--attach FILE] [--audio FILE] [--reply-to MSG] [--wait]"],
    about: "Sends a message (--audio: a voice memo, alone). --wait follows it until sent or failed (exit 5 when failed).",
  },
  outbox: { usage: ["outbox get OBX_ID [--wait]"], about: "An outbox item; --wait until it is sent or failed." },
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

/** IDs already handled, for dropping repeats after a reconnect; keeps the latest `limit`. */
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
