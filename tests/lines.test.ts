import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it, vi } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { newId } from "@/server/kernel/ids";
import { newInboundToken, sealConnection } from "@/server/platform/connection";
import { providerFor } from "@/server/platform/registry";
import { createConnectedLine } from "@/server/services/lines/line-connections";
import { probeDueLines } from "@/server/services/lines/line-monitor";
import { sessionActorFor } from "@/server/services/access/session";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { startFakeBlueBubbles } from "./fakes/bluebubbles";
import { type FakeSmsGateway, startFakeSmsGateway, type WebhookPost } from "./fakes/sms-gateway";
import { db, dispatch, get, makeAccount, phone } from "./helpers";
import { messagesOf } from "./line-flows";

// Lines as their owner sees them and as the line monitor keeps them: the list is current
// whichever process wrote the line, and one line's provider never holds up another's.

const fakes: FakeSmsGateway[] = [];
async function fake(): Promise<FakeSmsGateway> {
  const deliver = async (url: string, { headers, body }: WebhookPost) => (await dispatch(new Request(url, { method: "POST", headers, body }))).status;
  const gw = await startFakeSmsGateway({ deliver });
  fakes.push(gw);
  return gw;
}

/** A loopback server that accepts requests and never answers them: a provider that hangs. */
async function hangingServer() {
  const seen: number[] = [];
  const server = http.createServer(() => seen.push(Date.now()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}
const servers: http.Server[] = [];

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await Promise.all(fakes.map((f) => f.close()));
});

async function smsLine(gw: FakeSmsGateway) {
  const f = await makeAccount();
  const report = await createConnectedLine({
    accountId: f.accountId,
    handle: phone(),
    provider: "sms-gateway",
    providerConfig: { url: gw.url, username: gw.username, password: gw.password, signingKey: gw.signingKey, timeoutSeconds: 20 },
  });
  const config = { url: gw.url, username: gw.username, password: gw.password, signingKey: gw.signingKey, timeoutSeconds: 20 };
  return { key: f.key, accountId: f.accountId, config, line: { id: report.line.id, handle: report.line.handle } };
}

/**
 * Points a connected line at a provider that hangs, as a Mac or phone that stopped answering:
 * the connection sealed again for the new URL (its secrets are bound to where they are sent).
 */
async function hangs(line: Awaited<ReturnType<typeof smsLine>>, url: string) {
  const sealed = sealConnection(providerFor("sms-gateway"), { ...line.config, url }, newInboundToken(), line.line.id);
  await (await db()).line.update({ where: { id: line.line.id }, data: sealed });
}

describe("GET /v1/lines", () => {
  it("shows a line another process created at once, not after the key cache expires", async () => {
    const f = await makeAccount();
    const before = await get("/v1/lines", f.key);
    expect(before.status).toBe(200);
    // What the operator CLI or another instance does: a row written behind this process's caches.
    const handle = phone();
    const created = await (await db()).line.create({ data: { id: newId("line"), accountId: f.accountId, handle, service: "sms" } });
    const after = await get("/v1/lines", f.key);
    expect(after.status).toBe(200);
    expect(after.body.data.map((l: { id: string }) => l.id)).toContain(created.id);
    // And a change made there (deactivation) shows too.
    await (await db()).line.update({ where: { id: created.id }, data: { isActive: false } });
    const changed = await get("/v1/lines", f.key);
    expect(changed.body.data.find((l: { id: string }) => l.id === created.id)).toMatchObject({ handle, is_active: false });
  });
});

/** tRPC over HTTP as the dashboard calls it, signed in as the account's owner. */
async function dashboard(procedure: string, accountId: string, input: unknown) {
  const req = new Request(`http://localhost/api/trpc/${procedure}`, { method: "POST", body: JSON.stringify(input), headers: { "content-type": "application/json" } });
  const res = await handleTrpc(req, async () => sessionActorFor(accountId));
  return { status: res.status, body: await res.json() };
}

describe("who may give a line a real handle", () => {
  it("an account owner gets simulated numbers only; a real number or Apple ID needs the operator, so none can be squatted", async () => {
    const squatter = await makeAccount();
    const real = phone().replace("+1555", "+1415");
    for (const handle of [real, "victim@icloud.com", "+1 555 0200 000"]) {
      const res = await dashboard("lines.create", squatter.accountId, { label: "mine now", handle });
      expect(res.status, handle).toBe(400);
      expect(res.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "handle", requestId: expect.stringMatching(/^req_/) });
    }
    expect(await (await db()).line.count({ where: { handle: { in: [real, "victim@icloud.com"] } } })).toBe(0);
    const simulated = `+155501${String(Math.floor(Math.random() * 100_000)).padStart(5, "0")}`;
    const ok = await dashboard("lines.create", squatter.accountId, { handle: simulated });
    expect(ok.status).toBe(200);
    expect(ok.body.result.data).toMatchObject({ handle: simulated });
    // The number's real holder, through the operator, still gets it.
    const owner = await makeAccount();
    expect((await createConnectedLine({ accountId: owner.accountId, handle: real })).line).toMatchObject({ handle: real });
  });

  it("an owner's line takes the handle its provider names (a Mac's Apple ID) on connect, unless another line has it", async () => {
    const bb = await startFakeBlueBubbles({ deliver: async () => undefined });
    try {
      const connect = async (accountId: string) => {
        const created = await dashboard("lines.create", accountId, { label: "my Mac" });
        expect(created.body.result.data.handle).toMatch(/^\+155501\d{5}$/);
        const res = await dashboard("lines.connect", accountId, { line_id: created.body.result.data.id, provider: "bluebubbles", provider_config: { url: bb.url, password: bb.password } });
        expect(res.status).toBe(200);
        return res.body.result.data as { line: { handle: string }; probe: { ok: boolean } };
      };
      const first = await connect((await makeAccount()).accountId);
      expect(first.probe.ok).toBe(true);
      expect(first.line.handle).toBe("fake-owner@icloud.com");
      // The Apple ID is already a line's: another account's line keeps its simulated number.
      const second = await connect((await makeAccount()).accountId);
      expect(second.line.handle).toMatch(/^\+155501\d{5}$/);
    } finally {
      await bb.close();
    }
  });
});

describe("lines per account", () => {
  it("refuses a line over MAX_LINES_PER_ACCOUNT with 403 line_limit_reached, from the dashboard and the operator CLI's service", async () => {
    process.env.MAX_LINES_PER_ACCOUNT = "3";
    resetConfig();
    try {
      const f = await makeAccount(); // one line
      const create = () => dashboard("lines.create", f.accountId, { label: "more" });
      expect((await create()).status).toBe(200);
      expect((await create()).status).toBe(200);
      const refused = await create();
      expect(refused.status).toBe(403);
      expect(refused.body.error.data).toMatchObject({ code: "line_limit_reached", requestId: expect.stringMatching(/^req_/) });
      expect(refused.body.error.message).toContain("3 lines");
      await expect(createConnectedLine({ accountId: f.accountId, handle: phone() })).rejects.toMatchObject({ code: "line_limit_reached" });
      expect(await (await db()).line.count({ where: { accountId: f.accountId } })).toBe(3);
      // Another account is not affected.
      expect((await makeAccount()).line.id).toMatch(/^ln_/);
    } finally {
      delete process.env.MAX_LINES_PER_ACCOUNT;
      resetConfig();
    }
  });
});

describe("the line monitor", () => {
  it("a line whose provider hangs delays neither another line's catch-up in the same tick nor the tick itself", async () => {
    process.env.PROVIDER_CHECK_TIMEOUT_SECONDS = "2";
    resetConfig();
    try {
      const hang = await hangingServer();
      servers.push(hang.server);
      const slow = await smsLine(await fake());
      const gw = await fake();
      const fine = await smsLine(gw);
      await hangs(slow, hang.url);
      // A message the webhook never brought: only catch-up finds it.
      gw.faults.webhooksOff = true;
      const alice = phone();
      await gw.receive({ from: alice, text: "while the webhook was lost" });
      gw.faults.webhooksOff = false;
      await (await db()).line.updateMany({ where: { id: { in: [slow.line.id, fine.line.id] } }, data: { lastProbeAt: null } });

      const started = Date.now();
      const tick = probeDueLines();
      await vi.waitFor(async () => expect((await messagesOf(fine, alice)).map((m) => m.text)).toEqual(["while the webhook was lost"]), { timeout: 3_000, interval: 50 });
      expect(await tick).toBeGreaterThanOrEqual(2);
      // The hanging probe (15 s of its own timeout) was cut off at the check's deadline.
      expect(Date.now() - started).toBeLessThan(8_000);
      expect(hang.seen.length).toBeGreaterThan(0);
      const row = await (await db()).line.findUniqueOrThrow({ where: { id: slow.line.id } });
      expect(row).toMatchObject({ status: "degraded", statusReason: expect.stringContaining("took longer than 2 s") });
      expect((await (await db()).line.findUniqueOrThrow({ where: { id: fine.line.id } })).status).toBe("connected");
    } finally {
      delete process.env.PROVIDER_CHECK_TIMEOUT_SECONDS;
      resetConfig();
    }
  }, 30_000);

  it("checks at most PROVIDER_CHECK_CONCURRENCY lines at once", async () => {
    process.env.PROVIDER_CHECK_TIMEOUT_SECONDS = "3";
    process.env.PROVIDER_CHECK_CONCURRENCY = "2";
    resetConfig();
    try {
      const hang = await hangingServer();
      servers.push(hang.server);
      const lines = [];
      for (let i = 0; i < 4; i++) lines.push(await smsLine(await fake()));
      for (const l of lines) await hangs(l, hang.url);
      await (await db()).line.updateMany({ where: { id: { in: lines.map((l) => l.line.id) } }, data: { lastProbeAt: null } });
      const tick = probeDueLines();
      await vi.waitFor(() => expect(hang.seen.length).toBeGreaterThanOrEqual(2), { timeout: 2_500, interval: 20 });
      // The other two wait for a slot: until the first checks' deadline, nothing more reaches the provider.
      await new Promise((r) => setTimeout(r, 300));
      expect(hang.seen).toHaveLength(2);
      await tick;
      expect(hang.seen).toHaveLength(4);
    } finally {
      delete process.env.PROVIDER_CHECK_TIMEOUT_SECONDS;
      delete process.env.PROVIDER_CHECK_CONCURRENCY;
      resetConfig();
    }
  }, 30_000);
});
