import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { sandboxLine } from "@/server/services/lines/sandbox-line";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { createCaller } from "@/server/transports/trpc/router";
import { explainProblem } from "@/server/platform/about";
import { db, gql, makeAccount, type Fixture } from "./helpers";

// Connecting a line to BlueBubbles from the dashboard (tRPC lines.connect / lines.test /
// lines.connections) and from GraphQL (connectLine / testLineConnection, owner's session only),
// against the fake BlueBubbles server on loopback. The password never comes back.

// GraphQL reads the dashboard session through next-auth, which needs Next's request scope:
// the signed-in session is supplied here instead (as in graphql-security.test.ts).
const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));
const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";

// ---------------------------------------------------------------------------------------------

let bb: FakeBlueBubbles;
/** Every response body this file saw, to check that no password was ever in one. */
const bodies: string[] = [];
const passwords: string[] = [];

beforeAll(async () => {
  bb = await startFakeBlueBubbles({ password: `bb-pw-${randomBytes(8).toString("hex")}`, deliver: async () => undefined });
  passwords.push(bb.password);
});
afterAll(async () => {
  await bb.close();
});
beforeEach(() => {
  session.actor = null;
});

/** A tRPC call over HTTP (the route's handler), signed in as `f` or signed out. */
async function trpc(procedure: string, input: unknown, f: Pick<Fixture, "accountId"> | null, method: "GET" | "POST" = "POST") {
  const url = new URL(`http://localhost/api/trpc/${procedure}`);
  if (method === "GET" && input !== undefined) url.searchParams.set("input", JSON.stringify(input));
  const req = new Request(url, method === "POST" ? { method, body: JSON.stringify(input), headers: { "content-type": "application/json" } } : {});
  const res = await handleTrpc(req, async () => (f ? sessionActorFor(f.accountId) : null));
  const text = await res.text();
  bodies.push(text);
  return { status: res.status, body: JSON.parse(text) };
}

/** A GraphQL operation as the signed-in owner of `f` (the session cookie), or with an API key. */
async function graphql(as: { session: Fixture } | { key: string }, query: string, variables?: Record<string, unknown>) {
  if ("session" in as) session.actor = sessionActorFor(as.session.accountId);
  const res = "session" in as ? await gql(null, query, variables, { cookie: COOKIE }) : await gql(as.key, query, variables);
  bodies.push(JSON.stringify(res.body));
  return res;
}

const owner = (f: Fixture) => createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });
const bbConfig = (password = bb.password) => ({ url: bb.url, password, sendTimeoutSeconds: 60 });

const REPORT = `line { id provider status statusReason lastEventAt advancedFeatures providerSettings } ok reason capabilities advancedFeatures warnings`;
const CONNECT = `mutation($input: ConnectLineInput!) { connectLine(input: $input) { ${REPORT} } }`;
const TEST = `mutation($lineId: String!) { testLineConnection(lineId: $lineId) { ${REPORT} } }`;

describe("dashboard (tRPC): connecting a line to BlueBubbles", () => {
  it("connects: the probe finds the Private API, the line is connected, its webhook registered, settings shown without the password", async () => {
    const f = await makeAccount({ advanced: false });
    const res = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig() }, f);
    expect(res.status).toBe(200);
    const report = res.body.result.data;
    expect(report.probe).toMatchObject({
      ok: true,
      reason: null,
      advancedFeatures: true,
      capabilities: { private_api: true, helper_connected: true, reactions: true, typing: true, server_version: "1.9.9", os_version: "15.5" },
    });
    expect(report.line).toMatchObject({
      id: f.line.id,
      provider: "bluebubbles",
      status: "connected",
      status_reason: null,
      advanced_features: true,
      provider_settings: { url: bb.url, sendTimeoutSeconds: 60 },
    });
    expect(report.line.last_event_at).toEqual(expect.any(Number));
    // Tests run with PUBLIC_URL on localhost: the provider could not call back another machine.
    expect(report.warnings.join(" ")).toMatch(/PUBLIC_URL/);
    expect(bb.webhooks.some((w) => w.url.includes(`/api/inbound/${f.line.id}?token=`))).toBe(true);

    // The page's lists: the line list carries provider and health; connections add the settings.
    const list = await trpc("lines.list", undefined, f, "GET");
    expect(list.body.result.data.data.find((l: { id: string }) => l.id === f.line.id)).toMatchObject({ provider: "bluebubbles", status: "connected" });
    const connections = await trpc("lines.connections", undefined, f, "GET");
    expect(connections.body.result.data).toEqual([
      expect.objectContaining({ id: f.line.id, provider: "bluebubbles", status: "connected", provider_settings: { url: bb.url, sendTimeoutSeconds: 60 } }),
    ]);

    // Test connection again with the saved settings.
    const tested = await owner(f).lines.test({ line_id: f.line.id });
    expect(tested.probe).toMatchObject({ ok: true, advancedFeatures: true });
    expect(tested.line.status).toBe("connected");
  });

  it("a wrong password: the test fails with a readable reason and saves nothing; confirmed, the line is saved degraded", async () => {
    const f = await makeAccount({ advanced: false });
    const wrong = `wrong-${randomBytes(6).toString("hex")}`;
    passwords.push(wrong);
    const refused = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig(wrong) }, f);
    expect(refused.status).toBe(200);
    expect(refused.body.result.data).toMatchObject({ saved: false, probe: { ok: false, reason: expect.stringMatching(/Authentication Error/) } });
    // Tested before saving: the line is as it was.
    expect(refused.body.result.data.line).toMatchObject({ id: f.line.id, provider: "simulated", status: "connected" });
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).provider).toBe("simulated");

    const res = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig(wrong), save_failing: true }, f);
    expect(res.status).toBe(200);
    const report = res.body.result.data;
    expect(report.saved).toBe(true);
    expect(report.probe.ok).toBe(false);
    expect(report.probe.advancedFeatures).toBe(false);
    expect(report.probe.reason).toMatch(/Authentication Error/);
    expect(report.probe.reason).toMatch(/not authorized|Unauthorized/);
    expect(report.line).toMatchObject({ provider: "bluebubbles", status: "degraded", status_reason: report.probe.reason });
    // No webhook is registered with settings that do not work.
    expect(bb.webhooks.some((w) => w.url.includes(`/api/inbound/${f.line.id}?`))).toBe(false);

    // Connected, then the password changes on the Mac: Test connection finds it degraded.
    const g = await makeAccount();
    await owner(g).lines.connect({ line_id: g.line.id, provider: "bluebubbles", provider_config: bbConfig() });
    const previous = bb.password;
    bb.password = `changed-${randomBytes(6).toString("hex")}`;
    passwords.push(bb.password);
    try {
      const tested = await trpc("lines.test", { line_id: g.line.id }, g);
      expect(tested.body.result.data.probe).toMatchObject({ ok: false, reason: expect.stringMatching(/Authentication Error/) });
      expect(tested.body.result.data.line.status).toBe("degraded");
    } finally {
      bb.password = previous;
    }
  });

  it("switches a line back to simulated from the same form", async () => {
    const f = await makeAccount();
    await owner(f).lines.connect({ line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig() });
    const back = await trpc("lines.connect", { line_id: f.line.id, provider: "simulated", provider_config: {} }, f);
    expect(back.body.result.data.probe.ok).toBe(true);
    expect(back.body.result.data.line).toMatchObject({ provider: "simulated", status: "connected", provider_settings: {} });
    const row = await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } });
    expect(row.provider).toBe("simulated");

    // A degraded line switched back to simulated is connected, and the health history says so.
    const wrong = `wrong-${randomBytes(6).toString("hex")}`;
    passwords.push(wrong);
    await owner(f).lines.connect({ line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig(wrong), save_failing: true });
    await owner(f).lines.connect({ line_id: f.line.id, provider: "simulated", provider_config: {} });
    const history = await (await db()).lineStatusChange.findMany({ where: { lineId: f.line.id }, orderBy: { at: "asc" } });
    expect(history.map((h) => [h.previousStatus, h.status])).toEqual([
      ["connected", "degraded"],
      ["degraded", "connected"],
    ]);
  });

  it("refuses another account's line, the sandbox line, bad settings, and signed-out callers", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const connect = await trpc("lines.connect", { line_id: other.line.id, provider: "bluebubbles", provider_config: bbConfig() }, f);
    expect(connect.status).toBe(404);
    expect(connect.body.error.data).toMatchObject({ code: "line_not_found", param: "line_id" });
    const test = await trpc("lines.test", { line_id: other.line.id }, f);
    expect(test.status).toBe(404);
    expect(test.body.error.data).toMatchObject({ code: "line_not_found" });
    const untouched = await (await db()).line.findUniqueOrThrow({ where: { id: other.line.id } });
    expect(untouched.provider).toBe("simulated");
    expect((await trpc("lines.connections", undefined, f, "GET")).body.result.data.map((l: { id: string }) => l.id)).toEqual([f.line.id]);

    const sandbox = await sandboxLine();
    expect((await trpc("lines.connect", { line_id: sandbox.id, provider: "simulated" }, f)).body.error.data).toMatchObject({ code: "line_not_found" });
    expect((await trpc("lines.test", { line_id: sandbox.id }, f)).body.error.data).toMatchObject({ code: "line_not_found" });

    const badUrl = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: "mac.local", password: "x" } }, f);
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
    expect(badUrl.body.error.message).toMatch(/url/);
    const noPassword = await trpc("lines.connect", { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: bb.url } }, f);
    expect(noPassword.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider_config" });
    const badProvider = await trpc("lines.connect", { line_id: f.line.id, provider: "carrier-pigeon" }, f);
    expect(badProvider.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "provider" });

    const signedOut = await trpc("lines.connect", { line_id: f.line.id, provider: "simulated" }, null);
    expect(signedOut.status).toBe(401);
    expect(signedOut.body.error.data).toMatchObject({ code: "session_required" });
  });
});

describe("GraphQL: connectLine and testLineConnection for the account's owner", () => {
  it("connects as the owner's session: ok, capabilities, advanced features, line fields with providerSettings", async () => {
    const f = await makeAccount({ advanced: false });
    const res = await graphql({ session: f }, CONNECT, {
      input: { lineId: f.line.id, provider: "bluebubbles", providerConfig: bbConfig(), sendRatePerSecond: 2 },
    });
    expect(res.body.errors).toBeUndefined();
    const report = res.body.data.connectLine;
    expect(report).toMatchObject({
      ok: true,
      reason: null,
      advancedFeatures: true,
      capabilities: { private_api: true, helper_connected: true, reactions: true, detected_imessage: "fake-owner@icloud.com" },
      line: { id: f.line.id, provider: "bluebubbles", status: "connected", statusReason: null, advancedFeatures: true, providerSettings: { url: bb.url, sendTimeoutSeconds: 60 } },
    });
    expect(report.line.lastEventAt).toEqual(expect.any(Number));
    expect(report.warnings).toEqual([expect.stringMatching(/PUBLIC_URL/)]);
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).sendRatePerSecond).toBe(2);

    const tested = await graphql({ session: f }, TEST, { lineId: f.line.id });
    expect(tested.body.data.testLineConnection).toMatchObject({ ok: true, line: { status: "connected" } });

    // An inline literal JSON object works as well as a variable.
    const literal = await graphql(
      { session: f },
      `mutation { connectLine(input: { lineId: "${f.line.id}", provider: "bluebubbles", providerConfig: { url: "${bb.url}", password: "${bb.password}" } }) { ok line { providerSettings } } }`,
    );
    expect(literal.body.data.connectLine).toMatchObject({ ok: true, line: { providerSettings: { url: bb.url, sendTimeoutSeconds: 150 } } });
  });

  it("a wrong password: ok false with a readable reason, the line degraded", async () => {
    const f = await makeAccount({ advanced: false });
    const wrong = `wrong-gql-${randomBytes(6).toString("hex")}`;
    passwords.push(wrong);
    const res = await graphql({ session: f }, CONNECT, { input: { lineId: f.line.id, provider: "bluebubbles", providerConfig: bbConfig(wrong) } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.connectLine).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/Authentication Error/),
      advancedFeatures: false,
      capabilities: {},
      line: { provider: "bluebubbles", status: "degraded", statusReason: expect.stringMatching(/Authentication Error/) },
    });
  });

  it("API keys are refused, whatever their scopes; they see provider and health, not providerSettings", async () => {
    const f = await makeAccount();
    await owner(f).lines.connect({ line_id: f.line.id, provider: "bluebubbles", provider_config: bbConfig() });
    const connect = await graphql({ key: f.key }, CONNECT, { input: { lineId: f.line.id, provider: "simulated" } });
    expect(connect.body.errors[0].extensions.code).toBe("session_required");
    expect(connect.body.data).toBeNull();
    const test = await graphql({ key: f.key }, TEST, { lineId: f.line.id });
    expect(test.body.errors[0].extensions.code).toBe("session_required");
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).provider).toBe("bluebubbles");

    const lines = await graphql({ key: f.key }, `{ lines { edges { node { id provider status statusReason lastEventAt providerSettings } } } }`);
    expect(lines.body.errors).toBeUndefined();
    const node = lines.body.data.lines.edges.map((e: { node: { id: string } }) => e.node).find((n: { id: string }) => n.id === f.line.id);
    expect(node).toMatchObject({ provider: "bluebubbles", status: "connected", statusReason: null, providerSettings: null });
    expect(node.lastEventAt).toEqual(expect.any(Number));
    const asOwner = await graphql({ session: f }, `{ lines { edges { node { id providerSettings } } } }`);
    expect(asOwner.body.data.lines.edges.find((e: { node: { id: string } }) => e.node.id === f.line.id).node.providerSettings).toEqual({
      url: bb.url,
      sendTimeoutSeconds: 60,
    });
  });

  it("another account's line is not found; bad settings name providerConfig", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const connect = await graphql({ session: f }, CONNECT, { input: { lineId: other.line.id, provider: "bluebubbles", providerConfig: bbConfig() } });
    expect(connect.body.errors[0].extensions).toMatchObject({ code: "line_not_found", param: "lineId" });
    const test = await graphql({ session: f }, TEST, { lineId: other.line.id });
    expect(test.body.errors[0].extensions).toMatchObject({ code: "line_not_found" });
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: other.line.id } })).provider).toBe("simulated");

    const bad = await graphql({ session: f }, CONNECT, { input: { lineId: f.line.id, provider: "bluebubbles", providerConfig: { url: "not a url", password: "x" } } });
    expect(bad.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value", param: "providerConfig" });
    const provider = await graphql({ session: f }, CONNECT, { input: { lineId: f.line.id, provider: "nope" } });
    expect(provider.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value", param: "provider" });
  });
});

describe("secrets", () => {
  it("no response body of this file ever carried a BlueBubbles password", () => {
    expect(bodies.length).toBeGreaterThan(10);
    expect(passwords.length).toBeGreaterThan(2);
    for (const body of bodies) for (const password of passwords) expect(body).not.toContain(password);
  });
});

describe("dashboard (tRPC): adding a provider line", () => {
  it("tests before it stores: a wrong password adds nothing; the right one creates the line with the Apple ID the Mac names", async () => {
    const f = await makeAccount();
    const before = await (await db()).line.count({ where: { accountId: f.accountId } });
    const wrong = `wrong-${randomBytes(6).toString("hex")}`;
    passwords.push(wrong);
    const failed = await owner(f).lines.add({ provider: "bluebubbles", provider_config: bbConfig(wrong), label: "Mac" });
    expect(failed).toMatchObject({ saved: false, line: null, probe: { ok: false, reason: expect.stringMatching(/Authentication Error/) } });
    // The page explains it in words, with the fix.
    expect(explainProblem("bluebubbles", failed.probe.reason)).toMatch(/password is wrong: check BlueBubbles Server → Settings → Password/);
    expect(await (await db()).line.count({ where: { accountId: f.accountId } })).toBe(before);

    const added = await owner(f).lines.add({ provider: "bluebubbles", provider_config: bbConfig(), label: "Mac" });
    expect(added.saved).toBe(true);
    expect(added.probe.ok).toBe(true);
    // The fake Mac is signed in as fake-owner@icloud.com: the line takes the handle the provider names.
    expect(added.handle).toBe("fake-owner@icloud.com");
    expect(added.line).toMatchObject({ handle: "fake-owner@icloud.com", label: "Mac", provider: "bluebubbles", status: "connected" });
    expect(bb.webhooks.some((w) => w.url.includes(`/api/inbound/${added.line!.id}?token=`))).toBe(true);
    // The handle now belongs to this line: adding it again (here or in another account) is refused.
    const other = await makeAccount();
    await expect(owner(other).lines.add({ provider: "bluebubbles", provider_config: bbConfig() })).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "invalid_parameter_value", param: "handle" }),
    });
  });

  it("a failing connection is saved only when confirmed, with the owner's handle; bad input gets the documented codes", async () => {
    const f = await makeAccount();
    const wrong = `wrong-${randomBytes(6).toString("hex")}`;
    passwords.push(wrong);
    const handle = `owner-${randomBytes(4).toString("hex")}@example.com`;
    const saved = await owner(f).lines.add({ provider: "bluebubbles", provider_config: bbConfig(wrong), handle, save_failing: true });
    expect(saved).toMatchObject({ saved: true, handle, line: { handle, provider: "bluebubbles", status: "degraded" }, probe: { ok: false } });
    // Without a handle, a failing test cannot name one: saving it is refused.
    await expect(owner(f).lines.add({ provider: "bluebubbles", provider_config: bbConfig(wrong), save_failing: true })).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "missing_required_parameter", param: "handle" }),
    });
    await expect(owner(f).lines.add({ provider: "simulated", provider_config: {} })).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "invalid_parameter_value", param: "provider" }),
    });
    await expect(owner(f).lines.add({ provider: "bluebubbles", provider_config: { url: "not a url" } })).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "invalid_parameter_value", param: "provider_config" }),
    });
  });
});
