import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { connectLine, createConnectedLine } from "@/server/services/lines/line-connections";
import { WEBHOOK_GRACE } from "@/server/services/lines/line-health";
import { catchUpLine, probeDueLines } from "@/server/services/lines/line-monitor";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { type FakeSmsGateway, startFakeSmsGateway, type WebhookPost } from "./fakes/sms-gateway";
import { db, dispatch, get, makeAccount, phone } from "./helpers";
import { messagesOf } from "./line-flows";

// Provider webhooks are registered by the server, at its own PUBLIC_URL: the operator CLI runs
// with its own environment (another port, another host name) and must not decide where a
// provider posts. A registration under an old address is removed, and a line whose webhooks do
// not arrive says so.

/** Where "the server" listens: only webhooks posted there reach the inbound route. */
let serverOrigin = "http://127.0.0.1:4400";
const lost: string[] = [];
async function reach(url: string, init: RequestInit): Promise<number> {
  if (new URL(url).origin !== serverOrigin) {
    lost.push(url);
    return 0;
  }
  return (await dispatch(new Request(url, { method: "POST", ...init }))).status;
}

const bbs: FakeBlueBubbles[] = [];
async function bluebubbles(): Promise<FakeBlueBubbles> {
  const bb = await startFakeBlueBubbles({
    deliver: async (url, body) => void (await reach(url, { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })),
  });
  bbs.push(bb);
  return bb;
}
const gateways: FakeSmsGateway[] = [];
async function gateway(): Promise<FakeSmsGateway> {
  const gw = await startFakeSmsGateway({ deliver: (url: string, { headers, body }: WebhookPost) => reach(url, { headers, body }) });
  gateways.push(gw);
  return gw;
}
afterAll(async () => {
  await Promise.all([...bbs, ...gateways].map((f) => f.close()));
});

function usePublicUrl(url: string): void {
  process.env.PUBLIC_URL = url;
  resetConfig();
}
afterEach(() => {
  usePublicUrl("http://localhost:3000");
  serverOrigin = "http://127.0.0.1:4400";
  WEBHOOK_GRACE.ms = 60_000;
});

const due = async (lineId: string) => (await db()).line.update({ where: { id: lineId }, data: { lastProbeAt: null } });
const webhookPosts = (bb: FakeBlueBubbles) => bb.requests.filter((r) => r.method === "POST" && r.path === "/api/v1/webhook").length;

describe("webhook registration", () => {
  it("BlueBubbles: the server moves a registration made under another address to its own PUBLIC_URL, and leaves a right one alone", async () => {
    const bb = await bluebubbles();
    const f = await makeAccount();
    // What the old CLI did: registered with its own guess (localhost:3000) while the server runs on 4400.
    usePublicUrl("http://localhost:3000");
    const report = await createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: { url: bb.url, password: bb.password } });
    const lineId = report.line.id;
    expect(bb.webhooks.map((w) => new URL(w.url).origin)).toEqual(["http://localhost:3000"]);
    const alice = phone();
    bb.receive({ from: alice, text: "lost on the wrong port" });
    await bb.idle();
    expect(lost.some((u) => u.includes(lineId))).toBe(true);

    // The server, with its own PUBLIC_URL, at its next line check.
    usePublicUrl(serverOrigin);
    await due(lineId);
    await probeDueLines();
    expect(bb.webhooks).toHaveLength(1);
    expect(bb.webhooks[0]!.url).toMatch(new RegExp(`^${serverOrigin}/api/inbound/${lineId}\\?token=[\\w-]{20,}$`));
    const line = { handle: report.line.handle };
    bb.receive({ from: alice, text: "now on the right port" });
    await bb.idle();
    expect((await messagesOf({ key: f.key, line }, alice)).map((m) => m.text)).toContain("now on the right port");

    // Registered right: the next check changes nothing.
    const posts = webhookPosts(bb);
    await due(lineId);
    await probeDueLines();
    expect(webhookPosts(bb)).toBe(posts);
    expect(bb.webhooks).toHaveLength(1);
  });

  it("the operator CLI's connect registers nothing itself: the line is due, and the server's check registers it at the server's address", async () => {
    const bb = await bluebubbles();
    const f = await makeAccount();
    usePublicUrl("http://localhost:3000"); // the CLI's own environment
    const report = await createConnectedLine(
      { accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: { url: bb.url, password: bb.password } },
      { registerWebhooks: false },
    );
    expect(report.probe.ok).toBe(true);
    expect(bb.webhooks).toHaveLength(0);
    expect(report.warnings).toEqual(expect.arrayContaining([expect.stringContaining("running server registers this line's webhooks")]));
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: report.line.id } })).lastProbeAt).toBeNull();

    usePublicUrl(serverOrigin);
    expect(await probeDueLines()).toBeGreaterThanOrEqual(1);
    expect(bb.webhooks.map((w) => w.url)).toEqual([expect.stringMatching(new RegExp(`^${serverOrigin}/api/inbound/${report.line.id}\\?token=`))]);
  });

  it("SMS Gateway: the server re-registers the four fixed-ID webhooks at its PUBLIC_URL, replacing the old address", async () => {
    const gw = await gateway();
    const f = await makeAccount();
    usePublicUrl("https://old.example.test");
    serverOrigin = "https://relay.example.test";
    const report = await createConnectedLine({
      accountId: f.accountId,
      handle: phone(),
      provider: "sms-gateway",
      providerConfig: { url: gw.url, username: gw.username, password: gw.password, signingKey: gw.signingKey },
    });
    const ours = () => [...gw.webhooks.values()].filter((w) => w.id.startsWith(report.line.id));
    expect(ours().map((w) => new URL(w.url).origin)).toEqual(Array(4).fill("https://old.example.test"));

    usePublicUrl(serverOrigin);
    await due(report.line.id);
    await probeDueLines();
    expect(ours()).toHaveLength(4);
    expect(ours().every((w) => w.url.startsWith(`${serverOrigin}/api/inbound/${report.line.id}?token=`))).toBe(true);
    const alice = phone();
    await gw.receive({ from: alice, text: "arrives" });
    expect((await messagesOf({ key: f.key, line: { handle: report.line.handle } }, alice)).map((m) => m.text)).toEqual(["arrives"]);
  });
});

describe("webhooks that do not arrive", () => {
  it("make the line degraded with a reason saying so once catch-up finds what they never brought; a webhook that arrives clears it", async () => {
    usePublicUrl(serverOrigin);
    const bb = await bluebubbles();
    const f = await makeAccount();
    const report = await connectLine(f.accountId, { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: bb.url, password: bb.password } });
    expect(report.line.status).toBe("connected");
    WEBHOOK_GRACE.ms = 50;
    // The provider cannot reach this server (a firewall, a proxy that drops them).
    serverOrigin = "http://unreachable.invalid";
    const alice = phone();
    bb.receive({ from: alice, text: "never posted" });
    await bb.idle();
    await new Promise((r) => setTimeout(r, 100));
    expect((await catchUpLine(f.line.id)).counts.stored).toBe(1);
    const listed = async () => (await get("/v1/lines", f.key)).body.data.find((l: { id: string }) => l.id === f.line.id);
    expect(await listed()).toMatchObject({ status: "degraded", status_reason: expect.stringMatching(/webhooks are not arriving: catch-up found 1 message/) });
    // The probe still answers, but the line stays degraded for that reason.
    await due(f.line.id);
    await probeDueLines();
    expect(await listed()).toMatchObject({ status: "degraded", status_reason: expect.stringContaining("webhooks are not arriving") });

    serverOrigin = new URL(process.env.PUBLIC_URL!).origin;
    bb.receive({ from: alice, text: "posted again" });
    await bb.idle();
    expect(await listed()).toMatchObject({ status: "connected", status_reason: null });
  });
});
