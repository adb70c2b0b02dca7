import { z } from "zod";
import { config } from "../../kernel/config";
import { defineProvider, type ProviderLine } from "../provider";
import { smsGatewayAbout } from "./about";
import { providerUrlSetting } from "../settings-url";
import type { ProbeResult, ProviderInbound } from "../types";
import { createSmsGatewayClient, describeSmsGatewayError, type SGWebhookEventName, type SmsGatewayClient } from "./client";
import { mapIncoming, mapWebhook, verifyWebhookSignature } from "./inbound";
import { smsGatewayPlatform } from "./platform";

const DEFAULT_TIMEOUT_SECONDS = 20;

export const WEBHOOK_EVENTS = {
  "sms:received": "recv",
  "sms:sent": "sent",
  "sms:delivered": "dlvr",
  "sms:failed": "fail",
} as const satisfies Partial<Record<SGWebhookEventName, string>>;

/** Fixed ("ln_…-recv", 34 characters; the API allows 36): registering again replaces it instead of adding one more. */
export function webhookId(lineId: string, event: keyof typeof WEBHOOK_EVENTS): string {
  return `${lineId}-${WEBHOOK_EVENTS[event]}`;
}

const Config = z
  .object({
    url: providerUrlSetting("must be the gateway API's URL, e.g. http://phone.lan:8080 or https://api.sms-gate.app/3rdparty/v1")
      .refine((u) => !/^https?:\/\/api\.sms-gate\.app(\/|$)/i.test(u) || /\/3rdparty\/v1$/i.test(u), "for the cloud, must be https://api.sms-gate.app/3rdparty/v1"),
    username: z.string().min(1, "is required (shown in the app)").max(200).default("sms"),
    password: z.string().min(1, "is required (the password shown in the app)").max(500),
    signingKey: z.string().min(1, "is required (the app's Settings → Webhooks → Signing Key)").max(500),
    timeoutSeconds: z.number().int().min(1).max(120).default(DEFAULT_TIMEOUT_SECONDS),
  })
  .strict();

const Settings = z.object({ url: z.string(), username: z.string(), timeoutSeconds: z.number().int().default(DEFAULT_TIMEOUT_SECONDS) });
const Secrets = z.object({ password: z.string(), signingKey: z.string() });
type Settings = z.output<typeof Settings>;
type Secrets = z.output<typeof Secrets>;
type Line = ProviderLine<Settings, Secrets>;

function clientFor(line: Line, timeoutMs = line.settings.timeoutSeconds * 1000): SmsGatewayClient {
  return createSmsGatewayClient({ url: line.settings.url, username: line.settings.username, password: line.secrets.password }, { timeoutMs });
}

/** Why the gateway may never call `url`: it only calls https:// URLs and http://127.0.0.1 (its "insecure" build excepted). */
function inboundUrlWarning(url: string): string | null {
  const u = new URL(url);
  if (u.protocol === "https:" || (u.protocol === "http:" && u.hostname === "127.0.0.1")) return null;
  return `This line's inbound URL (${u.origin}) is neither https:// nor http://127.0.0.1: SMS Gateway for Android only calls such URLs (its "insecure" build excepted), so received SMS and delivery reports may never arrive. Set PUBLIC_URL to an https:// address the phone can reach and connect the line again.`;
}

/** Catch-up windows by line: the inbox lists newest first, so pages are read from its end. */
const windows = new Map<string, { after: number; to: number; total: number | null }>();

const CAPABILITIES = {
  attachments: false,
  mms: false,
  group_messages: false,
  reactions: false,
  typing: false,
  read_receipts: false,
  replies: false,
  voice_memos: false,
  delivery_reports: true,
} as const;

export const smsGatewayProvider = defineProvider<z.output<typeof Config>, Settings, Secrets>({
  name: smsGatewayAbout.name,
  label: smsGatewayAbout.label,
  configSchema: Config,
  split: (c) => ({
    settings: { url: c.url, username: c.username, timeoutSeconds: c.timeoutSeconds },
    secrets: { password: c.password, signingKey: c.signingKey },
  }),
  load: (settings, secrets) => ({ settings: Settings.parse(settings), secrets: Secrets.safeParse(secrets).data ?? { password: "", signingKey: "" } }),
  destination: (s) => s.url,
  describe: (s) => ({ url: s.url.replace(/\/\/[^/@]*@/, "//***@"), username: s.username, timeoutSeconds: s.timeoutSeconds }),
  // A send is one POST, and after a 409 one GET.
  sendTimeoutMs: (s) => 2 * s.timeoutSeconds * 1000,
  service: "sms",
  deliveryReports: true,
  idempotentSends: false,
  monitored: smsGatewayAbout.monitored,

  platform: (line) => smsGatewayPlatform(clientFor(line)),

  async probe(line): Promise<ProbeResult> {
    // GET /webhooks: cheap, authenticated on the local server and the cloud alike (GET /health
    // is not, so it alone would not prove the password), and it shows our registrations.
    const client = clientFor(line, 15_000);
    try {
      const hooks = await client.listWebhooks();
      const ours = hooks.filter(
        (h) => h.url === line.inboundUrl && (Object.keys(WEBHOOK_EVENTS) as (keyof typeof WEBHOOK_EVENTS)[]).some((e) => h.id === webhookId(line.id, e) && h.event === e),
      ).length;
      const health = await client.health().catch(() => null);
      const warning = line.inboundUrl ? inboundUrlWarning(line.inboundUrl) : null;
      return {
        ok: true,
        reason: warning,
        capabilities: {
          ...CAPABILITIES,
          gateway_version: health?.version ?? null,
          gateway_health: health?.status ?? null,
          webhooks_registered: ours,
          webhook_url_accepted: warning === null,
        },
        advancedFeatures: false,
      };
    } catch (err) {
      return { ok: false, reason: describeSmsGatewayError(err), capabilities: {}, advancedFeatures: false };
    }
  },

  // Standing, so the Lines page shows it too: every line's inbound URL starts with PUBLIC_URL.
  warnings() {
    const warning = inboundUrlWarning(config().PUBLIC_URL);
    return warning ? [warning] : [];
  },

  async registerWebhooks(line) {
    const warning = inboundUrlWarning(line.inboundUrl);
    const client = clientFor(line, 15_000);
    for (const event of Object.keys(WEBHOOK_EVENTS) as (keyof typeof WEBHOOK_EVENTS)[]) {
      try {
        await client.registerWebhook({ id: webhookId(line.id, event), url: line.inboundUrl, event });
      } catch (err) {
        // The standard app refuses such URLs (400 "url must start with https:// or http://127.0.0.1").
        if (warning) return [`${warning} The gateway refused to register it: ${describeSmsGatewayError(err)}.`];
        throw new Error(describeSmsGatewayError(err));
      }
    }
    return warning ? [warning] : [];
  },

  // Registering again under the fixed IDs replaces the URL, so a registration under an old address never lingers.
  async webhooksRegistered(line) {
    const hooks = await clientFor(line, 15_000).listWebhooks();
    return (Object.keys(WEBHOOK_EVENTS) as (keyof typeof WEBHOOK_EVENTS)[]).every((e) =>
      hooks.some((h) => h.id === webhookId(line.id, e) && h.event === e && h.url === line.inboundUrl),
    );
  },

  inbound: {
    auth: "signature",
    verify: (request, line) => verifyWebhookSignature(line.secrets.signingKey, request),
    parse: (body) => mapWebhook(body),
  },

  // The cloud and private relay have no inbox listing (501): there catch-up asks the relay to have the phone post
  // sms:received again for the window (POST /inbox/refresh), deduplicated as they arrive.
  async catchUp(line, after, page): Promise<ProviderInbound[]> {
    const client = clientFor(line);
    let window = windows.get(line.id);
    if (page.offset === 0 || !window || window.after !== after) {
      // A fixed upper bound keeps the listing (and its count) still while it is paged.
      const to = Date.now();
      const head = await client.inbox({ from: after, to, limit: 1, offset: 0 });
      if (!head) {
        await client.refreshInbox({ since: after, until: to });
        return [];
      }
      window = { after, to, total: head.total };
      windows.set(line.id, window);
    }
    let offset = page.offset;
    let limit = page.limit;
    if (window.total !== null) {
      // Oldest first: item i of the window is item total-1-i of the newest-first listing.
      const remaining = window.total - page.offset;
      if (remaining <= 0) {
        windows.delete(line.id);
        return [];
      }
      limit = Math.min(page.limit, remaining);
      offset = remaining - limit;
    }
    const listed = await client.inbox({ from: window.after, to: window.to, limit, offset });
    if (!listed) return [];
    const events = listed.messages.map(mapIncoming).reverse();
    if (events.length < page.limit) windows.delete(line.id);
    return events;
  },
});
