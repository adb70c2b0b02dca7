import dns, { type LookupAddress } from "node:dns";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { parseConfig, resetConfig } from "@/server/kernel/config";
import { providerLine } from "@/server/platform/connection";
import { createConnectedLine, testLine } from "@/server/services/lines/line-connections";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { listenLoopback } from "./fakes/http";
import { type DeliveredAnswer, type FakeTwilio, startFakeTwilio } from "./fakes/twilio";
import { db, dispatch, fakeTwilioLine, gql, makeAccount, phone, type Fixture } from "./helpers";
import { messagesOf } from "./line-flows";

// Provider URLs and the address guard, as an account owner meets them (issue 23, security 1
// and 2): with PROVIDER_ALLOW_PRIVATE off, a line cannot be pointed at loopback, a private
// range, link-local (cloud metadata) or the service itself, through any door (tRPC, GraphQL,
// the operator CLI's createConnectedLine); a line stored earlier with such a URL reaches
// nothing; an over-long URL is refused at once. Nothing here sends to a private or link-local
// address: refusals happen before a socket is opened, and the only servers are on loopback.

const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));
const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";
const CONNECT = `mutation($input: ConnectLineInput!) { connectLine(input: $input) { ok reason } }`;

function allowPrivate(on: boolean): void {
  process.env.PROVIDER_ALLOW_PRIVATE = on ? "true" : "false";
  resetConfig();
}
afterEach(() => allowPrivate(true));

async function trpc(procedure: string, input: unknown, f: Pick<Fixture, "accountId">) {
  const req = new Request(`http://localhost/api/trpc/${procedure}`, { method: "POST", body: JSON.stringify(input), headers: { "content-type": "application/json" } });
  const res = await handleTrpc(req, async () => sessionActorFor(f.accountId));
  return { status: res.status, body: JSON.parse(await res.text()) };
}

const fakes: FakeTwilio[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});
async function deliver(url: string, init: { body: string; headers: Record<string, string> }): Promise<DeliveredAnswer> {
  const res = await dispatch(new Request(url, { method: "POST", headers: init.headers, body: init.body }));
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

const LOCAL_URLS = ["http://169.254.169.254", "http://127.0.0.1:1234", "http://[::1]:1234", "http://10.0.0.5:8080", "http://192.168.1.20:1234", "http://localhost:3000", "http://metadata.google.internal"];

describe("connecting a line to a local address (PROVIDER_ALLOW_PRIVATE off)", () => {
  it("is refused by tRPC lines.connect, GraphQL connectLine and the operator CLI with invalid_parameter_value, and nothing is stored", async () => {
    allowPrivate(false);
    const f = await makeAccount();
    for (const url of LOCAL_URLS) {
      for (const [provider, config] of [
        ["bluebubbles", { url, password: "pw" }],
        ["sms-gateway", { url, password: "pw", signingKey: "key" }],
        ["twilio", { accountSid: `AC${"1".repeat(32)}`, authToken: "tok", baseUrl: url }],
      ] as const) {
        const res = await trpc("lines.connect", { line_id: f.line.id, provider, provider_config: config }, f);
        expect(res.status, `${provider} ${url}`).toBe(400);
        expect(res.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
        expect(res.body.error.message).toContain("destination not allowed");
        expect(res.body.error.message).toContain("PROVIDER_ALLOW_PRIVATE");

        session.actor = sessionActorFor(f.accountId);
        const gqlRes = await gql(null, CONNECT, { input: { lineId: f.line.id, provider, providerConfig: config } }, { cookie: COOKIE });
        expect(gqlRes.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value", param: "providerConfig" });

        await expect(createConnectedLine({ accountId: f.accountId, handle: phone(), provider, providerConfig: config })).rejects.toMatchObject({
          code: "invalid_parameter_value",
          param: "provider_config",
          message: expect.stringContaining("destination not allowed"),
        });
      }
    }
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).provider).toBe("simulated");
    expect(await (await db()).line.count({ where: { accountId: f.accountId } })).toBe(1);
  });

  it("a host name that resolves to a local address is refused the same way when the line is connected (stubbed resolver)", async () => {
    allowPrivate(false);
    const real = dns.lookup.bind(dns);
    const names: Record<string, string> = { "mac.example.test": "127.0.0.1", "gw.example.test": "10.0.0.7", "edge.example.test": "169.254.169.254" };
    const spy = vi.spyOn(dns, "lookup").mockImplementation(((hostname: string, options: unknown, callback: (err: Error | null, a: LookupAddress[]) => void) => {
      const address = names[hostname];
      if (!address) return (real as (...args: unknown[]) => void)(hostname, options, callback);
      process.nextTick(() => callback(null, [{ address, family: 4 }]));
    }) as unknown as typeof dns.lookup);
    try {
      const f = await makeAccount();
      for (const [provider, config] of [
        ["bluebubbles", { url: "http://mac.example.test:1234", password: "pw" }],
        ["sms-gateway", { url: "http://gw.example.test:8080", password: "pw", signingKey: "key" }],
        ["twilio", { accountSid: `AC${"1".repeat(32)}`, authToken: "tok", baseUrl: "https://edge.example.test" }],
      ] as const) {
        const res = await trpc("lines.connect", { line_id: f.line.id, provider, provider_config: config }, f);
        expect(res.status, provider).toBe(400);
        expect(res.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
        expect(res.body.error.message).toContain("destination not allowed");
        await expect(createConnectedLine({ accountId: f.accountId, handle: phone(), provider, providerConfig: config })).rejects.toMatchObject({ code: "invalid_parameter_value" });
      }
      expect(await (await db()).line.count({ where: { accountId: f.accountId } })).toBe(1);
      expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).provider).toBe("simulated");
    } finally {
      spy.mockRestore();
    }
  });

  it("a line saved with such a URL earlier reaches nothing: the probe says why, and the server got no request", async () => {
    let hits = 0;
    const mac = await listenLoopback((_req, res) => {
      hits++;
      res.writeHead(500).end();
    });
    try {
      allowPrivate(true);
      const f = await makeAccount();
      await createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: { url: mac.url, password: "pw" } });
      const line = await (await db()).line.findFirstOrThrow({ where: { accountId: f.accountId, provider: "bluebubbles" } });
      allowPrivate(false);
      hits = 0;
      const report = await testLine(f.accountId, line.id);
      expect(report.probe.ok).toBe(false);
      expect(report.probe.reason).toContain("destination not allowed");
      expect(report.probe.reason).toContain("PROVIDER_ALLOW_PRIVATE=true");
      expect(hits).toBe(0);
    } finally {
      await mac.close();
    }
  });

  it("a signed Twilio webhook naming media on a local origin stores no file (the reported read-back)", async () => {
    allowPrivate(true);
    const tw = await startFakeTwilio({ deliver, numbers: [phone(), phone()] });
    fakes.push(tw);
    const t = await fakeTwilioLine(tw);
    allowPrivate(false);
    const alice = phone();
    const before = tw.requests.length;
    const r = await tw.receive({ from: alice, body: "", media: [{ contentType: "image/png", bytes: new Uint8Array([1, 2, 3]) }] });
    expect(r.answer?.status).toBe(200);
    expect(tw.requests.length).toBe(before);
    const [m] = await messagesOf(t, alice);
    expect(m!.attachments).toEqual([]);
    expect(m!.text).toContain("could not be downloaded");
  });

  it("with PROVIDER_ALLOW_PRIVATE on (a Mac on the LAN), a signed webhook still reads no path of the line's base URL: only PROVIDER_MEDIA_FROM_BASE_URL allows that, never in production", async () => {
    allowPrivate(true);
    delete process.env.PROVIDER_MEDIA_FROM_BASE_URL;
    const tw = await startFakeTwilio({ deliver, numbers: [phone(), phone()] });
    fakes.push(tw);
    const t = await fakeTwilioLine(tw);
    const alice = phone();
    const before = tw.requests.length;
    // The fake's own media URL, and any other path of the base URL's origin (an internal service's page).
    const r = await tw.receive({ from: alice, body: "", media: [{ contentType: "image/png", bytes: new Uint8Array([1, 2, 3]) }] });
    expect(r.answer?.status).toBe(200);
    const other = await tw.receive({ from: alice, body: "look", deliver: false });
    const params = other.params.map(([k, v]): [string, string] => (k === "NumMedia" ? [k, "1"] : [k, v]));
    params.push(["MediaContentType0", "image/png"], ["MediaUrl0", `${tw.url}/internal/admin?dump=1`]);
    expect((await tw.post(t.inboundUrl, params)).status).toBe(200);
    expect(tw.requests.slice(before)).toEqual([]);
    const messages = await messagesOf(t, alice);
    expect(messages.map((m) => m.attachments)).toEqual([[], []]);
    expect(messages.map((m) => m.text)).toEqual(expect.arrayContaining([expect.stringContaining("could not be downloaded"), "look"]));
    expect(parseConfig({ NODE_ENV: "test", PROVIDER_ALLOW_PRIVATE: "true" }).providerMediaFromBaseUrl).toBe(false);
    expect(parseConfig({ NODE_ENV: "test", PROVIDER_MEDIA_FROM_BASE_URL: "true" }).providerMediaFromBaseUrl).toBe(true);
    expect(parseConfig({ NODE_ENV: "production", PROVIDER_ALLOW_PRIVATE: "true", PROVIDER_MEDIA_FROM_BASE_URL: "true" }).providerMediaFromBaseUrl).toBe(false);
  });
});

describe("over-long provider URLs (security 2)", () => {
  it("a URL of 128k slashes is refused at once through tRPC, GraphQL and the CLI, naming the cap", async () => {
    const f = await makeAccount();
    const url = `http://127.0.0.1:1${"/".repeat(128 * 1024)}`;
    const res = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: { url, password: "pw" } }, f);
    expect(res.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
    expect(res.body.error.message).toContain("at most 2048 characters");
    session.actor = sessionActorFor(f.accountId);
    const gqlRes = await gql(null, CONNECT, { input: { lineId: f.line.id, provider: "twilio", providerConfig: { accountSid: `AC${"1".repeat(32)}`, authToken: "t", baseUrl: url } } }, { cookie: COOKIE });
    expect(gqlRes.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value", param: "providerConfig" });
    expect(gqlRes.body.errors[0].message).toContain("at most 2048 characters");
    await expect(
      createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "sms-gateway", providerConfig: { url, password: "p", signingKey: "k" } }),
    ).rejects.toMatchObject({ code: "invalid_parameter_value", message: expect.stringContaining("at most 2048 characters") });
  });

  it("trailing slashes within the cap are trimmed before the URL is stored", async () => {
    const mac = await listenLoopback((_req, res) => {
      res.writeHead(500).end();
    });
    try {
      const f = await makeAccount();
      const report = await createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: { url: `${mac.url}${"/".repeat(2000)}`, password: "pw" } });
      expect(report.line.provider_settings).toMatchObject({ url: mac.url });
    } finally {
      await mac.close();
    }
  });
});

describe("BlueBubbles password in the URL (security 9)", () => {
  it("a ?password= (or guid / token) query is refused: the password belongs in the encrypted password field", async () => {
    const f = await makeAccount();
    for (const query of ["password=hunter22", "guid=hunter22", "token=hunter22"]) {
      const res = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: `http://127.0.0.1:1234/?${query}`, password: "pw" } }, f);
      expect(res.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
      expect(res.body.error.message).toContain("must not carry the server password in its query");
      expect(JSON.stringify(res.body)).not.toContain("hunter22");
    }
    const row = await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } });
    expect(JSON.stringify(row.providerSettings)).not.toContain("hunter22");
  });
});

describe("sealed secrets bound to their line and destination (security 9)", () => {
  it("a line's sealed secrets do not decrypt on another line or after its URL changed unsealed; unbound (v1) ones are read and sealed again", async () => {
    const { encryptJson } = await import("@/server/db/credentials");
    const { sealUnboundSecrets } = await import("@/server/platform/connection");
    const mac = await listenLoopback((_req, res) => {
      res.writeHead(500).end();
    });
    try {
      const f = await makeAccount();
      const g = await makeAccount();
      const config = { url: mac.url, password: "bound-pw-123" };
      await createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: config });
      await createConnectedLine({ accountId: g.accountId, handle: phone(), provider: "bluebubbles", providerConfig: config });
      const d = await db();
      const a = await d.line.findFirstOrThrow({ where: { accountId: f.accountId, provider: "bluebubbles" } });
      const b = await d.line.findFirstOrThrow({ where: { accountId: g.accountId, provider: "bluebubbles" } });
      expect(a.providerSecrets).toMatch(/^v2\./);
      expect(providerLine(a).secrets).toEqual({ password: "bound-pw-123" });

      // Copied onto another line: refused, never sent with that line's settings.
      expect(() => providerLine({ ...b, providerSecrets: a.providerSecrets })).toThrow(/connect the line again/);
      // The destination changed in the database, the secrets not sealed again: refused.
      expect(() => providerLine({ ...a, providerSettings: { ...(a.providerSettings as object), url: "https://attacker.example" } })).toThrow(/connect the line again/);

      // A value sealed before the binding (v1) is read, and sealed again bound at start.
      const legacy = encryptJson({ inboundToken: "t".repeat(32), secrets: { password: "old-pw-456" } });
      await d.line.update({ where: { id: a.id }, data: { providerSecrets: legacy } });
      const old = await d.line.findUniqueOrThrow({ where: { id: a.id } });
      expect(providerLine(old).secrets).toEqual({ password: "old-pw-456" });
      expect(await sealUnboundSecrets()).toBeGreaterThanOrEqual(1);
      const now = await d.line.findUniqueOrThrow({ where: { id: a.id } });
      expect(now.providerSecrets).toMatch(/^v2\./);
      expect(providerLine(now).secrets).toEqual({ password: "old-pw-456" });
      expect(() => providerLine({ ...b, providerSecrets: now.providerSecrets })).toThrow(/connect the line again/);
    } finally {
      await mac.close();
    }
  });
});
