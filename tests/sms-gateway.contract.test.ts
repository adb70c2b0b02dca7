import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSmsGatewayClient } from "@/server/platform/sms-gateway/client";
import { smsGatewayProvider } from "@/server/platform/sms-gateway";
import { type PrismMock, startPrism } from "./prism";

// Every request the SMS Gateway adapter makes, checked against the vendor's own OpenAPI
// document (tests/specs/sms-gateway.openapi.json) by a Prism mock: each must be valid and
// get the document's success status. The document describes the cloud API, whose paths sit at
// the root of the server URL (https://api.sms-gate.app/3rdparty/v1), as the phone's local
// server's do: the mock's URL is the line's base URL.

let mock: PrismMock;

beforeAll(async () => {
  mock = await startPrism("sms-gateway.openapi.json");
}, 90_000);

afterAll(async () => {
  await mock?.stop();
});

const line = () => ({
  id: "ln_01jcontract0000000000000000",
  handle: "+15550001111",
  service: "sms" as const,
  advancedFeatures: false,
  settings: { url: mock.url, username: "sms", timeoutSeconds: 10 },
  secrets: { password: "contract-pw", signingKey: "contract-key" },
  inboundUrl: "https://relay.example.test/api/inbound/ln_01jcontract0000000000000000?token=abc",
});

/** Calls through fetch, recording each request's method, path and answer status. */
function recordingFetch(log: { method: string; path: string; status: number }[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    log.push({ method: init?.method ?? "GET", path: new URL(String(input)).pathname, status: res.status });
    return res;
  };
}

describe("SMS Gateway requests against the vendor's OpenAPI document", () => {
  it("each client call is valid and answered with its success status", async () => {
    const log: { method: string; path: string; status: number }[] = [];
    const client = createSmsGatewayClient({ url: mock.url, username: "sms", password: "contract-pw" }, { fetch: recordingFetch(log), timeoutMs: 10_000 });

    const sent = await client.sendMessage({ id: "obx_01jcontract000000000000000", text: "Hello from the contract test", phoneNumbers: ["+15551230000"], withDeliveryReport: true });
    expect(sent.recipients.length).toBeGreaterThan(0);
    expect(await client.getMessage("obx_01jcontract000000000000000")).toMatchObject({ state: expect.any(String) });
    expect(Array.isArray(await client.listWebhooks())).toBe(true);
    for (const event of ["sms:received", "sms:sent", "sms:delivered", "sms:failed"] as const) {
      expect(await client.registerWebhook({ id: `ln_01jcontract0000000000000000-${event.slice(4, 8)}`, url: line().inboundUrl, event })).toMatchObject({ event: expect.any(String) });
    }
    expect(await client.health()).toMatchObject({ status: expect.any(String) });
    const inbox = await client.inbox({ from: Date.now() - 3_600_000, to: Date.now(), limit: 500, offset: 0 });
    expect(inbox?.messages.length).toBeGreaterThan(0);
    await client.refreshInbox({ since: Date.now() - 3_600_000, until: Date.now() });

    expect(log.map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([
      "POST /messages 202",
      "GET /messages/obx_01jcontract000000000000000 200",
      "GET /webhooks 200",
      "POST /webhooks 201",
      "POST /webhooks 201",
      "POST /webhooks 201",
      "POST /webhooks 201",
      "GET /health 200",
      "GET /inbox 200",
      "POST /inbox/refresh 202",
    ]);
    expect(mock.violations()).toEqual([]);
  });

  it("the provider's probe, webhook registration, send and catch-up all succeed against it", async () => {
    const l = line();
    const probe = await smsGatewayProvider.probe(l);
    expect(probe).toMatchObject({ ok: true, advancedFeatures: false, capabilities: expect.objectContaining({ attachments: false, delivery_reports: true }) });
    expect(await smsGatewayProvider.registerWebhooks!(l)).toEqual([]);
    const result = await smsGatewayProvider.platform(l).sendMessage({
      idempotencyKey: "obx_01jcontract000000000000001",
      lineHandle: l.handle,
      to: "+15551230000",
      isGroup: false,
      providerChatId: null,
      text: "A longer text that the phone splits into parts itself. ".repeat(5),
      attachments: [],
      replyToGuid: null,
      isAudioMessage: false,
    });
    expect(result).toMatchObject({ ok: true, guid: "obx_01jcontract000000000000001", service: "sms" });
    // Prism's example page: one SMS row (its X-Total-Count is no count, so the listing is read as is).
    const events = await smsGatewayProvider.catchUp!(l, Date.now() - 3_600_000, { offset: 0, limit: 500 });
    expect(events).toEqual([expect.objectContaining({ kind: "message", text: "Hello World!", service: "sms" })]);
    expect(mock.violations()).toEqual([]);
  });
});
