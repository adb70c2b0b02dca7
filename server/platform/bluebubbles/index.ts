import { z } from "zod";
import { defineProvider } from "../provider";
import { blueBubblesAbout } from "./about";
import { providerUrlSetting } from "../settings-url";
import type { ProbeResult } from "../types";
import { type BBWebhookEventName, createBlueBubblesClient, describeBlueBubblesError, privateApiUsable, redactUrl } from "./client";
import { mapMessage, mapWebhook } from "./inbound";
import { blueBubblesPlatform } from "./platform";

const DEFAULT_SEND_TIMEOUT_SECONDS = 150;

/** Whether a registered webhook URL is this line's inbound URL, at any address and with any token. */
function isLinesHook(url: string, lineId: string): boolean {
  try {
    return new URL(url).pathname.endsWith(`/api/inbound/${lineId}`);
  } catch {
    return false;
  }
}

/** Checked at compile time: a wrong name is a 400 and silently lost inbound. */
const WEBHOOK_EVENTS: readonly BBWebhookEventName[] = ["new-message", "updated-message", "typing-indicator", "chat-read-status-changed", "message-send-error"];

const Config = z
  .object({
    url: providerUrlSetting("must be the server's URL, e.g. http://mac.local:1234").refine(
      (u) => !["password", "guid", "token"].some((name) => new URL(u).searchParams.has(name)),
      "must not carry the server password in its query: give it as password, which is stored encrypted",
    ),
    password: z.string().min(1, "is required (the BlueBubbles server password)").max(500),
    sendTimeoutSeconds: z.number().int().min(5).max(600).default(DEFAULT_SEND_TIMEOUT_SECONDS),
  })
  .strict();

const Settings = z.object({ url: z.string(), sendTimeoutSeconds: z.number().int().default(DEFAULT_SEND_TIMEOUT_SECONDS) });
const Secrets = z.object({ password: z.string() });
type Settings = z.output<typeof Settings>;
type Secrets = z.output<typeof Secrets>;

function maskUrl(url: string): string {
  return redactUrl(url.replace(/\/\/[^/@]*@/, "//***@"));
}

export const blueBubblesProvider = defineProvider<z.output<typeof Config>, Settings, Secrets>({
  name: blueBubblesAbout.name,
  label: blueBubblesAbout.label,
  configSchema: Config,
  split: (c) => ({ settings: { url: c.url, sendTimeoutSeconds: c.sendTimeoutSeconds }, secrets: { password: c.password } }),
  load: (settings, secrets) => ({ settings: Settings.parse(settings), secrets: Secrets.safeParse(secrets).data ?? { password: "" } }),
  destination: (s) => s.url,
  describe: (s) => ({ url: maskUrl(s.url), sendTimeoutSeconds: s.sendTimeoutSeconds }),
  sendTimeoutMs: (s) => s.sendTimeoutSeconds * 1000,
  idempotentSends: false,
  monitored: blueBubblesAbout.monitored,

  platform: (line) =>
    blueBubblesPlatform(createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password }), {
      handle: line.handle,
      service: line.service,
      privateApi: line.advancedFeatures,
      sendTimeoutMs: line.settings.sendTimeoutSeconds * 1000,
    }),

  async probe(line): Promise<ProbeResult> {
    const client = createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password }, { timeoutMs: 15_000 });
    try {
      const info = await client.serverInfo();
      const advanced = privateApiUsable(info);
      return {
        ok: true,
        reason: advanced
          ? null
          : info.private_api
            ? "the Private API helper is not connected: reactions, typing, read receipts, replies and voice memos are unavailable"
            : "the Private API is off: reactions, typing, read receipts, replies and voice memos are unavailable",
        capabilities: {
          server_version: info.server_version,
          os_version: info.os_version,
          private_api: info.private_api,
          helper_connected: info.helper_connected,
          detected_imessage: info.detected_imessage,
          reactions: advanced,
          typing: advanced,
          read_receipts: advanced,
          replies: advanced,
          voice_memos: advanced,
          imessage_availability: advanced,
        },
        advancedFeatures: advanced,
        handle: info.detected_imessage || null,
      };
    } catch (err) {
      return { ok: false, reason: describeBlueBubblesError(err), capabilities: {}, advancedFeatures: false };
    }
  },

  async registerWebhooks(line) {
    const client = createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password }, { timeoutMs: 15_000 });
    // BlueBubbles keeps the first registration of a URL unchanged: remove every one of ours for
    // this line (any token, any address this service had before), then register the current
    // URL with the events we need.
    for (const hook of await client.listWebhooks()) {
      if (isLinesHook(hook.url, line.id)) await client.deleteWebhook(hook.id);
    }
    await client.addWebhook(line.inboundUrl, [...WEBHOOK_EVENTS]);
    return [];
  },

  async webhooksRegistered(line) {
    const client = createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password }, { timeoutMs: 15_000 });
    const ours = (await client.listWebhooks()).filter((h) => isLinesHook(h.url, line.id));
    return ours.length === 1 && ours[0]!.url === line.inboundUrl && WEBHOOK_EVENTS.every((e) => ours[0]!.events.includes(e));
  },

  inbound: {
    auth: "token",
    parse: (body) => mapWebhook(body),
  },

  async catchUp(line, after, page) {
    const client = createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password });
    const { messages } = await client.queryMessages({
      after,
      sort: "ASC",
      offset: page.offset,
      limit: page.limit,
      with: ["chat", "chat.participants", "attachment"],
    });
    return messages.map(mapMessage);
  },

  async downloadAttachment(line, ref, { maxBytes, sink }) {
    const client = createBlueBubblesClient({ url: line.settings.url, password: line.secrets.password });
    return client.downloadAttachment(ref.ref, { maxBytes, sink });
  },
});
