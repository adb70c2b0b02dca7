import { parseArgs } from "node:util";
import { Relay } from "../client.js";
import { AuthenticationError, AuthorizationError, ConnectionError, RelayError, TimeoutError } from "../errors.js";
import type { OutboxItem } from "../generated.js";
import { sandboxSmsLink } from "../sandbox.js";
import { configDir, DEFAULT_BASE_URL, readConfig, removeConfig, writeConfig } from "./config.js";
import { serveMcpOverStdio } from "./mcp.js";
import { encodeQr, renderQr } from "./qr.js";
import { capacityText, health, held, holdReasonOf, messageRow, OUTBOX_ACTIONS, outboxRow, outboxStatusOf, pendingText } from "./rows.js";
import { follow, listen } from "./streams.js";
import { spinner, style, type Style } from "./ui.js";
import { EXIT, type CliIo, UsageError, REACTION_TYPES, isReactionType, COMMANDS, help, OPTIONS, type Values, table, time, need, limitOf, fileArg, sendAtOf } from "./args.js";

// runCli takes its I/O as arguments, so tests drive it in-process.

export { EXIT, type CliIo };

/** Held past `deadline` or for a person's decision (approval): no use waiting. A send-rate turn or a provider coming back is waited for. */
function outlastsWait(item: OutboxItem, deadline: number): boolean {
  if (item.hold_reason === "approval") return true;
  if (!item.hold_reason || item.hold_reason === "line_rate" || item.hold_reason === "line_unavailable") return false;
  return item.not_before === null || item.not_before > deadline;
}

class StillPending extends Error {
  constructor(
    readonly item: OutboxItem,
    message: string,
  ) {
    super(message);
  }
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const ui = style(io.color === true);
  const out = (value: unknown, human: () => string) => io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
  let json = false;
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    json = values.json === true;
    const [command, sub, arg] = positionals;
    if (values.help || !command) {
      io.stdout(`${help(command)}\n`);
      return command || values.help ? EXIT.ok : EXIT.usage;
    }
    if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command '${command}'`);
    const dir = configDir(io.env);
    if (command === "logout") {
      const file = await removeConfig(dir);
      out({ config: file, removed: file !== null }, () => (file ? `Logged out: deleted ${file}.` : "Not logged in: no config file."));
      return EXIT.ok;
    }
    const saved = await readConfig(dir);
    const baseUrl = values["base-url"] ?? io.env.RELAY_BASE_URL ?? saved.baseUrl ?? DEFAULT_BASE_URL;
    const apiKey = values.key ?? io.env.RELAY_API_KEY ?? saved.apiKey;
    if (command === "mcp") {
      // Without a key it still serves, answering each request with how to log in: a desktop app shows that, not a dead process.
      if (!io.stdin) throw new Error("relay mcp needs stdin");
      await serveMcpOverStdio({ baseUrl, apiKey, stdin: io.stdin, stdout: io.stdout, stderr: io.stderr, fetch: io.fetch, signal: io.signal });
      return EXIT.ok;
    }
    if (!apiKey) {
      io.stderr(`No API key. Run \`relay login --key sk_live_...\` (create a key in the dashboard at ${baseUrl}/dashboard/keys), or set RELAY_API_KEY.\n`);
      return EXIT.auth;
    }
    const relay = new Relay({ apiKey, baseUrl, fetch: io.fetch });
    const signal = io.signal;

    /** A send held for approval, or until after the wait would end, stops the wait at once. */
    const waitFor = async (id: string, timeoutMs = 60_000): Promise<OutboxItem> => {
      const progress = json ? null : spinner(io.stderr, io.interactive === true, `Waiting for ${id}: pending`);
      const deadline = Date.now() + timeoutMs;
      let last: OutboxItem | null = null;
      try {
        return await relay.outbox.wait(id, {
          signal,
          timeoutMs,
          onPoll: (item) => {
            last = item;
            progress?.update(`Waiting for ${id}: ${item.status}${item.hold_reason ? ` (${item.hold_reason})` : ""}${item.attempts > 1 ? ` (attempt ${item.attempts})` : ""}`);
            if (item.status === "pending" && outlastsWait(item, deadline)) throw new StillPending(item, pendingText(item, baseUrl, timeoutMs));
          },
        });
      } catch (err) {
        if (err instanceof TimeoutError && last) throw new StillPending(last, pendingText(last, baseUrl, timeoutMs));
        throw err;
      } finally {
        progress?.stop();
      }
    };
    const finalStatus = (item: OutboxItem) => {
      out(item, () => `${item.id}: ${ui.status(item.status)}${held(item)}${item.error ? ` (${item.error})` : ""}, ${item.attempts} attempt(s)`);
      return item.status === "failed" ? EXIT.deliveryFailed : EXIT.ok;
    };

    switch (command) {
      case "login": {
        const lines = await relay.lines.list({ limit: 100 }, { signal });
        // listen's saved secrets stay (each belongs to one server and key).
        const file = await writeConfig(dir, { ...saved, apiKey, baseUrl });
        out({ base_url: baseUrl, lines: lines.data.length, config: file }, () => `${ui.green("✓")} Logged in to ${baseUrl}: ${lines.data.length} line(s). Saved to ${file}.`);
        return EXIT.ok;
      }
      case "lines": {
        const page = await relay.lines.list({ limit: limitOf(values) ?? 100 }, { signal });
        out(page, () =>
          table(
            page.data.map((l) => ({ ...l, active: l.is_active ? "yes" : "no", health: health(ui, l.status, l.status_reason), advanced: l.advanced_features ? "yes" : "no" })),
            ["handle", "label", "service", "provider", "health", "advanced", "active", "id"],
            ui,
          ),
        );
        return EXIT.ok;
      }
      case "pools": {
        const page = await relay.pools.list({ signal });
        // Lines by handle, as every command names them (an ID outside the first 100 lines stays an ID).
        const handles = new Map(page.data.length ? (await relay.lines.list({ limit: 100 }, { signal })).data.map((l) => [l.id, l.handle]) : []);
        out(page, () =>
          table(
            page.data.map((p) => ({ ...p, lines: p.line_ids.map((id) => handles.get(id) ?? id).join(", "), created: time(p.created_at) })),
            ["id", "name", "lines", "created"],
            ui,
          ),
        );
        return EXIT.ok;
      }
      case "capacity": {
        if (!sub) throw new UsageError("usage: relay capacity LINE_OR_POOL");
        const capacity = await relay.capacity.get(sub, { signal });
        out(capacity, () => capacityText(capacity, ui));
        return EXIT.ok;
      }
      case "chats": {
        if (sub === "pause" || sub === "resume") {
          if (!arg) throw new UsageError(`usage: relay chats ${sub} CHAT_ID`);
          const chat = sub === "pause" ? await relay.chats.pause(arg, { signal }) : await relay.chats.resume(arg, { signal });
          out(chat, () =>
            chat.paused_at
              ? `Paused ${chat.id} (${chat.identifier}) since ${time(chat.paused_at)} UTC${chat.paused_by ? ` by ${chat.paused_by}` : ""}: keys with guardrails cannot send to it until \`relay chats resume ${chat.id}\`.`
              : `Resumed ${chat.id} (${chat.identifier}): automated sending is allowed again.`,
          );
          return EXIT.ok;
        }
        if (sub) throw new UsageError("usage: relay chats --from LINE | pause CHAT_ID | resume CHAT_ID");
        const page = await relay.chats.list({ from: need(values, "from"), limit: limitOf(values) }, { signal });
        out(page, () => table(page.data.map((c) => ({ ...c, last: time(c.last_message_at), paused: c.paused_at ? `since ${time(c.paused_at)}` : "" })), ["identifier", "name", "last", "paused", "id"], ui));
        return EXIT.ok;
      }
      case "messages": {
        if (values.follow) return await follow(relay, values, io, ui, json);
        const page = await relay.messages.list({ from: need(values, "from"), to: values.to, limit: limitOf(values) }, { signal });
        out(page, () => table(page.data.map(messageRow), ["time", "from", "text"], ui));
        return EXIT.ok;
      }
      case "send": {
        const from = need(values, "from");
        const to = need(values, "to");
        if (values.audio && (values.attach || values.text)) throw new UsageError("--audio sends a voice memo alone: no --text or --attach with it");
        if (!values.audio && !values.attach && !values.text) throw new UsageError("pass --text, --attach or --audio");
        // Checked before anything is uploaded or sent.
        const sendAt = values.at === undefined ? undefined : sendAtOf(values.at);
        let accepted;
        if (values.audio) {
          const file = await fileArg(values.audio);
          const uploaded = await relay.files.upload(file.bytes, { filename: file.filename }, { signal });
          accepted = await relay.audioMessages.send({ from, to, audio_message: uploaded.id, reply_to: values["reply-to"], send_at: sendAt }, { signal });
        } else {
          const file = values.attach ? await fileArg(values.attach) : null;
          const uploaded = file ? await relay.files.upload(file.bytes, { filename: file.filename }, { signal }) : null;
          accepted = await relay.messages.send(
            { from, to, text: values.text, attachments: uploaded ? [uploaded.id] : undefined, reply_to: values["reply-to"], send_at: sendAt },
            { signal },
          );
        }
        if (!values.wait) {
          out(accepted, () =>
            sendAt === undefined
              ? `Accepted ${accepted.id} (${ui.status("pending")}). Follow it with: relay outbox get ${accepted.id} --wait`
              : `Scheduled ${accepted.id} for ${time(sendAt)} UTC (${ui.status("pending")}). Call it off with: relay outbox cancel ${accepted.id}`,
          );
          return EXIT.ok;
        }
        // A scheduled send is waited for until a minute past its time.
        return finalStatus(await waitFor(accepted.id, sendAt === undefined ? undefined : sendAt - Date.now() + 60_000));
      }
      case "outbox": {
        if (sub === "list") {
          const page = await relay.outbox.list({ from: values.from, status: outboxStatusOf(values.status), hold_reason: holdReasonOf(values.hold), limit: limitOf(values) }, { signal });
          out(page, () => table(page.data.map(outboxRow), ["id", "kind", "to", "what", "status", "held", "created"], ui));
          return EXIT.ok;
        }
        if (!arg || !OUTBOX_ACTIONS.includes(sub as (typeof OUTBOX_ACTIONS)[number])) {
          throw new UsageError("usage: relay outbox list | get OBX_ID [--wait] | cancel OBX_ID | reschedule OBX_ID --at TIME | approve OBX_ID | reject OBX_ID");
        }
        if (sub === "approve") {
          const item = await relay.outbox.approve(arg, { signal });
          out(item, () => `Approved ${item.id}: ${item.not_before && item.not_before > Date.now() ? `it goes at ${time(item.not_before)} UTC` : "it goes now"}. Follow it with: relay outbox get ${item.id} --wait`);
          return EXIT.ok;
        }
        if (sub === "reject") {
          const item = await relay.outbox.reject(arg, { signal });
          out(item, () => `Rejected ${item.id}: it will not be sent (${ui.status(item.status)}, ${item.error}).`);
          return EXIT.ok;
        }
        if (sub === "cancel") {
          const item = await relay.outbox.cancel(arg, { signal });
          out(item, () => `Canceled ${item.id}: it will not be sent.`);
          return EXIT.ok;
        }
        if (sub === "reschedule") {
          const item = await relay.outbox.reschedule(arg, sendAtOf(need(values, "at")), { signal });
          out(item, () => `Rescheduled ${item.id} for ${time(item.not_before)} UTC (${ui.status(item.status)}).`);
          return EXIT.ok;
        }
        return finalStatus(values.wait ? await waitFor(arg) : await relay.outbox.get(arg, { signal }));
      }
      case "react": {
        const type = need(values, "type");
        if (!isReactionType(type)) throw new UsageError(`--type must be one of ${REACTION_TYPES.join(", ")}`);
        const accepted = await relay.reactions.send({ from: need(values, "from"), to: need(values, "to"), message_id: need(values, "message"), type }, { signal });
        if (values.wait) return finalStatus(await waitFor(accepted.id));
        out(accepted, () => `Accepted ${accepted.id} (${ui.status("pending")}).`);
        return EXIT.ok;
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
        return await webhooks(relay, sub, arg, values, out, ui, signal);
      case "sandbox":
        return await sandbox(relay, sub, values, io, ui, out, json);
      case "listen":
        return await listen(relay, values, io, ui, json, { dir, baseUrl, apiKey });
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (err) {
    if (io.signal?.aborted) return EXIT.interrupted; // Ctrl-C mid-request: not an error to report
    if (err instanceof StillPending) {
      // The server answered: what the send waits for, never "is the server running?".
      if (json) io.stdout(`${JSON.stringify(err.item, null, 2)}\n`);
      else io.stderr(`${err.message}\n`);
      return EXIT.network;
    }
    if (err instanceof UsageError || (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      io.stderr(`${ui.red(err.message)}\nRun \`relay --help\` for usage.\n`);
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
              : err instanceof ConnectionError
                ? " Is the server running at that --base-url?"
                : "";
      if (json) io.stderr(`${JSON.stringify({ error: { type: err.type, code: err.code, message: err.message, param: err.param }, request_id: err.requestId })}\n`);
      else io.stderr(`${ui.red("Error:")} ${err.message}${where} ${ui.dim(`[${err.code}${err.requestId ? `, ${err.requestId}` : ""}]`)}${hint}\n`);
      return err instanceof AuthenticationError ? EXIT.auth : err instanceof ConnectionError ? EXIT.network : EXIT.apiError;
    }
    throw err;
  }
}

async function sandbox(relay: Relay, sub: string | undefined, values: Values, io: CliIo, ui: Style, out: Out, json: boolean): Promise<number> {
  if (sub !== "status" && sub !== "activate") throw new UsageError("usage: relay sandbox status | activate [--wait]");
  const signal = io.signal;
  let state = sub === "activate" ? await relay.sandbox.activate({ signal }) : await relay.sandbox.get({ signal });
  if (sub === "activate" && state.status === "pending" && state.activation_code && !json) {
    const link = sandboxSmsLink(state.sandbox_line_handle, state.activation_code);
    io.stdout(`Scan with your phone's camera, or text ${ui.bold(state.activation_code)} to ${ui.bold(state.sandbox_line_handle)} from your phone:\n\n`);
    io.stdout(`${renderQr(encodeQr(link), { color: io.color === true })}\n\n${ui.dim(link)}\n`);
  }
  if (sub === "activate" && values.wait && state.status !== "active") {
    const deadline = Date.now() + 10 * 60_000;
    const progress = json ? null : spinner(io.stderr, io.interactive === true, "Waiting for the activation text…");
    try {
      while (state.status !== "active") {
        if (Date.now() > deadline) {
          io.stderr("Still waiting for the activation text after 10 minutes: run `relay sandbox activate --wait` again for a new code.\n");
          return EXIT.network;
        }
        await new Promise((r) => setTimeout(r, 2_000));
        if (signal?.aborted) return EXIT.ok;
        state = await relay.sandbox.get({ signal });
      }
    } finally {
      progress?.stop();
    }
  }
  out(state, () =>
    [
      `Sandbox: ${ui.status(state.status)}${state.contact_identifier ? `, paired with ${state.contact_identifier}` : ""}`,
      `Line ${state.sandbox_line_handle}; today ${state.usage.used}/${state.usage.limit} messages, resets ${time(state.usage.resets_at)} UTC`,
    ].join("\n"),
  );
  return EXIT.ok;
}

type Out = (value: unknown, human: () => string) => void;

async function webhooks(relay: Relay, sub: string | undefined, arg: string | undefined, values: Values, out: Out, ui: Style, signal?: AbortSignal): Promise<number> {
  switch (sub) {
    case "list": {
      const page = await relay.webhooks.list({ from: values.from, limit: limitOf(values) }, { signal });
      out(page, () => table(page.data.map((w) => ({ ...w, events: w.events.join(","), active: w.is_active ? "yes" : "no" })), ["id", "url", "events", "active"], ui));
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
      out(page, () => table(page.data.map((d) => ({ ...d, created: time(d.created_at), last: d.last_status_code ?? d.last_error ?? "" })), ["id", "event", "status", "attempts", "last", "created"], ui));
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
