import type { Relay } from "../client.js";
import { RelayError } from "../errors.js";
import type { Message } from "../generated.js";
import { signWebhook } from "../webhooks.js";
import { EXIT, type CliIo, type Values, need, limitOf, recentIds, time, UsageError } from "./args.js";
import { listenSecret } from "./config.js";
import { messageRow } from "./rows.js";
import type { Style } from "./ui.js";

/** The stream is opened before the backlog is read, so nothing falls between them; repeats are dropped by message ID. */
export async function follow(relay: Relay, values: Values, io: CliIo, ui: Style, json: boolean): Promise<number> {
  const from = need(values, "from");
  const to = values.to;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (io.signal?.aborted) return EXIT.ok;
  io.signal?.addEventListener("abort", onAbort, { once: true });
  const seen = recentIds();
  let chatId = to?.startsWith("cht_") ? to : undefined;
  const print = (m: Message) => {
    if (seen.has(m.id)) return;
    seen.add(m.id);
    if (json) return io.stdout(`${JSON.stringify(m)}\n`);
    const row = messageRow(m);
    io.stdout(`${ui.dim(row.time)}  ${m.is_from_me ? ui.cyan(row.from.padEnd(16)) : row.from.padEnd(16)}  ${row.text}\n`);
  };
  let backlog: Promise<void> | undefined;
  let failure: unknown;
  const loadBacklog = async () => {
    const page = await relay.messages.list({ from, to, limit: limitOf(values) ?? 20 }, { signal: stop.signal }).catch((err: unknown) => {
      // A contact that has not written yet: nothing to show until it does.
      if (err instanceof RelayError && err.code === "chat_not_found" && !to?.startsWith("cht_")) return { data: [] as Message[] };
      throw err;
    });
    chatId ??= page.data[0]?.chat_id;
    for (const m of page.data.reverse()) print(m);
    if (!json) io.stderr(`${ui.dim(`Following new messages on ${from}${to ? ` with ${to}` : ""} (Ctrl-C to stop)`)}\n`);
  };
  try {
    const events = relay.listen(
      { from, events: "message.received,message.sent" },
      {
        signal: stop.signal,
        onSession: () => {
          backlog ??= loadBacklog().catch((err: unknown) => {
            if (stop.signal.aborted) return; // Ctrl-C while it loaded
            failure = err;
            stop.abort();
          });
        },
        onReconnect: ({ attempt, delayMs }) => {
          if (!json && attempt === 1) io.stderr(`${ui.yellow("Connection lost")}; reconnecting (next try in ${Math.round(delayMs / 100) / 10} s)…\n`);
        },
      },
    );
    for await (const event of events) {
      await backlog;
      if (event.event !== "message.received" && event.event !== "message.sent") continue;
      const m = event.data;
      if (to) {
        // A chat without messages yet: its first one is the contact's.
        if (chatId ? m.chat_id !== chatId : m.sender !== to) continue;
        chatId = m.chat_id;
      }
      print(m);
    }
    await backlog;
  } finally {
    io.signal?.removeEventListener("abort", onAbort);
  }
  if (failure) throw failure;
  return EXIT.ok;
}

/** Each event re-signed with this server and key's local secret (kept in the config file). */
export async function listen(relay: Relay, values: Values, io: CliIo, ui: Style, json: boolean, login: { dir: string; baseUrl: string; apiKey: string }): Promise<number> {
  const log = (value: unknown, human: string) => io.stdout(`${json ? JSON.stringify(value) : human}\n`);
  const rotate = values["rotate-secret"] === true;
  if (values["print-secret"]) {
    if (values["forward-to"]) throw new UsageError("--print-secret shows the secret and exits: leave out --forward-to");
    let saved: { secret: string; created: boolean };
    try {
      saved = await listenSecret(login.dir, login.baseUrl, login.apiKey, { rotate });
    } catch (err) {
      io.stderr(`${ui.red("Error:")} could not keep the signing secret in ${login.dir} (${(err as Error).message}). Set RELAY_CONFIG_DIR to a folder you can write.\n`);
      return EXIT.apiError;
    }
    log({ secret: saved.secret, created: saved.created, rotated: rotate }, saved.secret);
    return EXIT.ok;
  }
  const target = need(values, "forward-to");
  try {
    new URL(target);
  } catch {
    throw new UsageError(`--forward-to must be a URL such as http://localhost:4000/webhooks`);
  }
  const { secret } = await listenSecret(login.dir, login.baseUrl, login.apiKey, { rotate }).catch((err: Error) => {
    // A config folder it cannot write (read-only home): this run still works, with a secret of its own.
    io.stderr(ui.yellow(`Could not save the signing secret in ${login.dir} (${err.message}): this run uses a new one.\n`));
    return { secret: `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}` };
  });
  if (rotate) log({ type: "rotated", secret }, `${ui.yellow("New signing secret")} (the old one no longer signs): ${ui.bold(secret)}`);
  const forwarded = recentIds();
  for await (const event of relay.listen(
    { from: values.from, events: values.events },
    {
      signal: io.signal,
      onSession: (s) =>
        log(
          { type: "ready", session: s.session, lines: s.lines, events: s.events, secret, forward_to: target },
          `${ui.green("Ready.")} Listening on ${s.lines.join(", ")} (session ${s.session}).\nForwarding to ${target}, signed with ${ui.bold(secret)}\n(verify with verifyWebhook(rawBody, headers, "${secret}"))`,
        ),
      onReconnect: ({ attempt, delayMs, error }) =>
        log(
          { type: "reconnecting", attempt, delay_ms: delayMs, error: error instanceof Error ? error.message : null },
          ui.yellow(`Connection lost${error instanceof Error ? ` (${error.message})` : ""}; reconnecting in ${Math.round(delayMs / 100) / 10} s (attempt ${attempt})…`),
        ),
    },
  )) {
    if (forwarded.has(event.delivery_id)) continue; // repeated after a reconnect
    const rawBody = JSON.stringify(event);
    const headers = await signWebhook({ secret, rawBody, timestamp: Date.now(), deliveryId: event.delivery_id });
    let status: number | string;
    try {
      const res = await fetch(target, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: rawBody, signal: io.signal });
      status = res.status;
      await res.body?.cancel();
      if (res.ok) forwarded.add(event.delivery_id);
    } catch (err) {
      if (io.signal?.aborted) break;
      status = `error: ${(err as Error).message}`;
    }
    const shown = typeof status === "number" && status >= 200 && status < 300 ? ui.green(String(status)) : ui.red(String(status));
    log({ type: "forwarded", event: event.event, delivery_id: event.delivery_id, status }, `${ui.dim(time(Date.now()))}  ${event.event}  ${event.delivery_id}  -> ${shown}`);
  }
  return EXIT.ok;
}
