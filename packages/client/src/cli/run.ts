import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { Relay } from "../client.js";
import { AuthenticationError, AuthorizationError, ConnectionError, RelayError } from "../errors.js";
import { signWebhook } from "../webhooks.js";
import { configDir, DEFAULT_BASE_URL, readConfig, writeConfig } from "./config.js";

// The `relay` command. Human output by default, `--json` for scripts; exit codes scripts can
// rely on (EXIT). runCli takes its I/O as arguments, so tests drive it in-process.

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
} as const;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  /** For the API (tests pass an in-process one); forwarding in `listen` uses the global fetch. */
  fetch?: typeof fetch;
  signal?: AbortSignal;
  color?: boolean;
}

class UsageError extends Error {}

const REACTION_TYPES = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
const isReactionType = (t: string): t is (typeof REACTION_TYPES)[number] => (REACTION_TYPES as readonly string[]).includes(t);

const HELP = `relay - the Relay messaging API from your terminal

Usage: relay <command> [options]

  login --key sk_live_... [--base-url URL]    save the key (config file, mode 600) after checking it
  lines                                       the lines this key can use
  chats --from LINE                           chats of a line, most recent first
  messages --from LINE [--to CONTACT]         messages, newest first
  send --from LINE --to CONTACT [--text T] [--attach FILE] [--audio FILE] [--reply-to MSG] [--wait]
  outbox get ID [--wait]                      an outbox item (--wait: until sent or failed)
  react --from LINE --to CONTACT --message MSG --type love|like|dislike|laugh|emphasize|question
  typing --from LINE --to CONTACT [--off]     start (or stop) typing
  read --from LINE --to CONTACT               mark the chat read
  files upload FILE                           upload; prints the file_ ID for --attach-style use
  webhooks list | create --from LINE --url URL --events a,b | delete ID
  webhooks deliveries WEBHOOK_ID | resend --id DLV | resend --webhook WEBHOOK_ID --since ISO_OR_MS
  sandbox status | activate [--wait]          sandbox state; activate prints the code to text (--wait: until paired)
  listen --forward-to URL [--from LINE] [--events a,b]
                                              receive this key's events and POST each, signed with
                                              a local secret, to a local URL (like stripe listen)

Global: --key, --base-url (or RELAY_API_KEY, RELAY_BASE_URL), --json, --limit N, --help
Exit codes: 0 ok, 1 API error, 2 usage, 3 authentication, 4 network or timeout, 5 delivery failed`;

const OPTIONS = {
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
  limit: { type: "string" },
  "forward-to": { type: "string" },
  events: { type: "string" },
  message: { type: "string" },
  type: { type: "string" },
  off: { type: "boolean" },
  url: { type: "string" },
  id: { type: "string" },
  webhook: { type: "string" },
  since: { type: "string" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return "(none)";
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? "" : String(r[c]).replace(/\s+/g, " "))));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((row) => row[i]!.length))));
  const line = (values: string[]) => values.map((v, i) => (v.length > widths[i]! ? `${v.slice(0, widths[i]! - 1)}…` : v.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join("\n");
}

const time = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "");

function need(values: Values, name: keyof Values & string): string {
  const value = values[name];
  if (typeof value !== "string" || !value) throw new UsageError(`--${name} is required`);
  return value;
}

function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  const n = Number(values.limit);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError("--limit must be an integer from 1 to 100");
  return n;
}

async function fileArg(file: string): Promise<{ bytes: Uint8Array; filename: string }> {
  try {
    return { bytes: new Uint8Array(await readFile(file)), filename: path.basename(file) };
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const out = (value: unknown, human: () => string) => io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
  let json = false;
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    json = values.json === true;
    const [command, sub, arg] = positionals;
    if (values.help || !command) {
      io.stdout(`${HELP}\n`);
      return command || values.help ? EXIT.ok : EXIT.usage;
    }
    const dir = configDir(io.env);
    const saved = await readConfig(dir);
    const baseUrl = values["base-url"] ?? io.env.RELAY_BASE_URL ?? saved.baseUrl ?? DEFAULT_BASE_URL;
    const apiKey = values.key ?? io.env.RELAY_API_KEY ?? saved.apiKey;
    if (!apiKey) {
      io.stderr(`No API key. Run \`relay login --key sk_live_...\` (create a key in the dashboard at ${baseUrl}/dashboard/keys), or set RELAY_API_KEY.\n`);
      return EXIT.auth;
    }
    const relay = new Relay({ apiKey, baseUrl, fetch: io.fetch });
    const signal = io.signal;

    switch (command) {
      case "login": {
        const lines = await relay.lines.list({ limit: 100 }, { signal });
        const file = await writeConfig(dir, { apiKey, baseUrl });
        out({ base_url: baseUrl, lines: lines.data.length, config: file }, () => `Logged in to ${baseUrl}: ${lines.data.length} line(s). Saved to ${file}.`);
        return EXIT.ok;
      }
      case "lines": {
        const page = await relay.lines.list({ limit: limitOf(values) ?? 100 }, { signal });
        out(page, () => table(page.data.map((l) => ({ ...l, active: l.is_active ? "yes" : "no" })), ["handle", "label", "service", "active", "id"]));
        return EXIT.ok;
      }
      case "chats": {
        const page = await relay.chats.list({ from: need(values, "from"), limit: limitOf(values) }, { signal });
        out(page, () => table(page.data.map((c) => ({ ...c, last: time(c.last_message_at) })), ["identifier", "name", "last", "id"]));
        return EXIT.ok;
      }
      case "messages": {
        const page = await relay.messages.list({ from: need(values, "from"), to: values.to, limit: limitOf(values) }, { signal });
        out(page, () =>
          table(
            page.data.map((m) => ({
              time: time(m.sent_at),
              from: m.is_from_me ? "me" : m.sender,
              text: m.text ?? m.attachments.map((a) => `[${a.filename}]`).join(" "),
            })),
            ["time", "from", "text"],
          ),
        );
        return EXIT.ok;
      }
      case "send": {
        const from = need(values, "from");
        const to = need(values, "to");
        if (values.audio && (values.attach || values.text)) throw new UsageError("--audio sends a voice memo alone: no --text or --attach with it");
        if (!values.audio && !values.attach && !values.text) throw new UsageError("pass --text, --attach or --audio");
        let accepted;
        if (values.audio) {
          const file = await fileArg(values.audio);
          const uploaded = await relay.files.upload(file.bytes, { filename: file.filename }, { signal });
          accepted = await relay.audioMessages.send({ from, to, audio_message: uploaded.id, reply_to: values["reply-to"] }, { signal });
        } else {
          const file = values.attach ? await fileArg(values.attach) : null;
          const uploaded = file ? await relay.files.upload(file.bytes, { filename: file.filename }, { signal }) : null;
          accepted = await relay.messages.send(
            { from, to, text: values.text, attachments: uploaded ? [uploaded.id] : undefined, reply_to: values["reply-to"] },
            { signal },
          );
        }
        if (!values.wait) {
          out(accepted, () => `Accepted ${accepted.id} (pending). Follow it with: relay outbox get ${accepted.id} --wait`);
          return EXIT.ok;
        }
        return finalStatus(await relay.outbox.wait(accepted.id, { signal }));
      }
      case "outbox": {
        if (sub !== "get" || !arg) throw new UsageError("usage: relay outbox get OBX_ID [--wait]");
        const item = values.wait ? await relay.outbox.wait(arg, { signal }) : await relay.outbox.get(arg, { signal });
        return finalStatus(item);
      }
      case "react": {
        const type = need(values, "type");
        if (!isReactionType(type)) throw new UsageError(`--type must be one of ${REACTION_TYPES.join(", ")}`);
        const accepted = await relay.reactions.send({ from: need(values, "from"), to: need(values, "to"), message_id: need(values, "message"), type }, { signal });
        return values.wait ? finalStatus(await relay.outbox.wait(accepted.id, { signal })) : (out(accepted, () => `Accepted ${accepted.id} (pending).`), EXIT.ok);
      }
      case "typing": {
        const accepted = await relay.typing.send({ from: need(values, "from"), to: need(values, "to"), state: values.off ? "off" : "on" }, { signal });
        out(accepted, () => `Typing ${values.off ? "stopped" : "started"}: ${accepted.id}.`);
        return EXIT.ok;
      }
      case "read": {
        const accepted = await relay.receipts.send({ from: need(values, "from"), to: need(values, "to") }, { signal });
        out(accepted, () => `Marked read: ${accepted.id}.`);
        return EXIT.ok;
      }
      case "files": {
        if (sub !== "upload" || !arg) throw new UsageError("usage: relay files upload FILE");
        const file = await fileArg(arg);
        const uploaded = await relay.files.upload(file.bytes, { filename: file.filename }, { signal });
        out(uploaded, () => `${uploaded.id}  ${uploaded.filename}  ${uploaded.mime_type}  ${uploaded.size} bytes`);
        return EXIT.ok;
      }
      case "webhooks":
        return await webhooks(relay, sub, arg, values, out, signal);
      case "sandbox": {
        if (sub !== "status" && sub !== "activate") throw new UsageError("usage: relay sandbox status | activate [--wait]");
        let state = sub === "activate" ? await relay.sandbox.activate({ signal }) : await relay.sandbox.get({ signal });
        if (sub === "activate" && state.status === "pending" && state.activation_code && !json) {
          io.stdout(`Text ${state.activation_code} to ${state.sandbox_line_handle} from your phone (sms:${state.sandbox_line_handle}&body=${encodeURIComponent(state.activation_code)}).\n`);
        }
        if (sub === "activate" && values.wait) {
          const deadline = Date.now() + 10 * 60_000;
          while (state.status !== "active") {
            if (Date.now() > deadline) {
              io.stderr("Still waiting for the activation text after 10 minutes.\n");
              return EXIT.network;
            }
            await new Promise((r) => setTimeout(r, 2_000));
            if (signal?.aborted) return EXIT.ok;
            state = await relay.sandbox.get({ signal });
          }
        }
        out(state, () =>
          [
            `Sandbox: ${state.status}${state.contact_identifier ? `, paired with ${state.contact_identifier}` : ""}`,
            `Line ${state.sandbox_line_handle}; today ${state.usage.used}/${state.usage.limit} messages, resets ${time(state.usage.resets_at)} UTC`,
          ].join("\n"),
        );
        return EXIT.ok;
      }
      case "listen":
        return await listen(relay, values, io, json);
      default:
        throw new UsageError(`unknown command '${command}'`);
    }

    function finalStatus(item: { id: string; status: string; error: string | null; attempts: number }) {
      out(item, () => `${item.id}: ${item.status}${item.error ? ` (${item.error})` : ""}, ${item.attempts} attempt(s)`);
      return item.status === "failed" ? EXIT.deliveryFailed : EXIT.ok;
    }
  } catch (err) {
    if (err instanceof UsageError || (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      io.stderr(`${err.message}\nRun \`relay --help\` for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof RelayError) {
      const where = err.param ? ` (${err.param})` : "";
      const hint =
        err instanceof AuthenticationError
          ? " Check the key (relay login --key ...) and --base-url."
          : err instanceof AuthorizationError && err.code === "insufficient_scope"
            ? " Create a key with that scope in the dashboard."
            : err.code === "contact_has_not_messaged"
              ? " The contact must message the line first."
              : "";
      if (json) io.stderr(`${JSON.stringify({ error: { type: err.type, code: err.code, message: err.message, param: err.param }, request_id: err.requestId })}\n`);
      else io.stderr(`Error: ${err.message}${where} [${err.code}${err.requestId ? `, ${err.requestId}` : ""}]${hint}\n`);
      return err instanceof AuthenticationError ? EXIT.auth : err instanceof ConnectionError ? EXIT.network : EXIT.apiError;
    }
    throw err;
  }
}

/** `relay listen --forward-to URL`: each event, re-signed with a local secret, POSTed to URL. */
async function listen(relay: Relay, values: Values, io: CliIo, json: boolean): Promise<number> {
  const target = need(values, "forward-to");
  try {
    new URL(target);
  } catch {
    throw new UsageError(`--forward-to must be a URL such as http://localhost:4000/webhooks`);
  }
  const secret = randomSecret();
  const log = (value: unknown, human: string) => io.stdout(`${json ? JSON.stringify(value) : human}\n`);
  for await (const event of relay.listen(
    { from: values.from, events: values.events },
    {
      signal: io.signal,
      onSession: (s) =>
        log(
          { type: "ready", session: s.session, lines: s.lines, events: s.events, secret, forward_to: target },
          `Ready. Listening on ${s.lines.join(", ")} (session ${s.session}).\nForwarding to ${target}, signed with ${secret}\n(verify with verifyWebhook(rawBody, headers, "${secret}"))`,
        ),
    },
  )) {
    const rawBody = JSON.stringify(event);
    const headers = await signWebhook({ secret, rawBody, timestamp: Date.now(), deliveryId: event.delivery_id });
    let status: number | string;
    try {
      const res = await fetch(target, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: rawBody, signal: io.signal });
      status = res.status;
      await res.body?.cancel();
    } catch (err) {
      if (io.signal?.aborted) break;
      status = `error: ${(err as Error).message}`;
    }
    log({ type: "forwarded", event: event.event, delivery_id: event.delivery_id, status }, `${time(Date.now())}  ${event.event}  ${event.delivery_id}  -> ${status}`);
  }
  return EXIT.ok;
}

type Out = (value: unknown, human: () => string) => void;

async function webhooks(relay: Relay, sub: string | undefined, arg: string | undefined, values: Values, out: Out, signal?: AbortSignal): Promise<number> {
  switch (sub) {
    case "list": {
      const page = await relay.webhooks.list({ from: values.from, limit: limitOf(values) }, { signal });
      out(page, () => table(page.data.map((w) => ({ ...w, events: w.events.join(","), active: w.is_active ? "yes" : "no" })), ["id", "url", "events", "active"]));
      return EXIT.ok;
    }
    case "create": {
      const events = need(values, "events").split(",").map((e) => e.trim()).filter(Boolean);
      const hook = await relay.webhooks.create({ from: need(values, "from"), url: need(values, "url"), events }, { signal });
      out(hook, () => `Created ${hook.id}. Signing secret (shown once): ${hook.secret}`);
      return EXIT.ok;
    }
    case "delete": {
      if (!arg) throw new UsageError("usage: relay webhooks delete WEBHOOK_ID");
      const deleted = await relay.webhooks.delete(arg, { signal });
      out(deleted, () => `Deleted ${deleted.id}.`);
      return EXIT.ok;
    }
    case "deliveries": {
      if (!arg) throw new UsageError("usage: relay webhooks deliveries WEBHOOK_ID");
      const page = await relay.webhooks.deliveries({ webhook_id: arg, limit: limitOf(values) }, { signal });
      out(page, () => table(page.data.map((d) => ({ ...d, created: time(d.created_at), last: d.last_status_code ?? d.last_error ?? "" })), ["id", "event", "status", "attempts", "last", "created"]));
      return EXIT.ok;
    }
    case "resend": {
      let body: { id: string } | { webhook_id: string; since: number };
      if (values.id) body = { id: values.id };
      else {
        const raw = need(values, "since");
        const since = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
        if (Number.isNaN(since)) throw new UsageError("--since must be Unix ms or an ISO date");
        body = { webhook_id: need(values, "webhook"), since };
      }
      const result = await relay.webhooks.resend(body, { signal });
      out(result, () => `Resent ${result.resent} delivery(ies).`);
      return EXIT.ok;
    }
    default:
      throw new UsageError("usage: relay webhooks list | create | delete | deliveries | resend");
  }
}
