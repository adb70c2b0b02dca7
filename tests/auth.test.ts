import { describe, expect, it } from "vitest";
import { revokeApiKeyBySecret } from "@/server/services/access/api-keys";
import { call, expectRequestId, get, makeAccount, makeKey } from "./helpers";

describe("authentication (SPEC.md failure cases)", () => {
  it("401 missing_api_key without an Authorization header", async () => {
    const res = await get("/v1/lines");
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ type: "authentication_error", code: "missing_api_key", message: expect.any(String) });
    expectRequestId(res);
  });

  it.each([
    ["Basic abc", "wrong scheme"],
    ["Bearer", "no token"],
    ["Bearer sk_test_abcdefghijklmnopqrstuvwx", "wrong prefix"],
    ["Bearer sk_live_short", "too short"],
    ["Bearer sk_live_abcdefghijklmnopqrstuvwxyz012345", "unknown key"],
  ])("401 invalid_api_key for %s (%s)", async (authorization) => {
    const res = await get("/v1/lines", null, { authorization });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("invalid_api_key");
    expect(res.body.error.type).toBe("authentication_error");
    expectRequestId(res);
  });

  it("a key works, and is rejected once revoked or expired", async () => {
    const f = await makeAccount();
    expect((await get("/v1/lines", f.key)).status).toBe(200);
    expect(await revokeApiKeyBySecret(f.key)).toBe(true);
    const revoked = await get("/v1/lines", f.key);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe("invalid_api_key");
    expect(revoked.body.error.message).toMatch(/revoked/);

    const expired = await makeKey(f.accountId, { expiresAt: new Date(Date.now() - 1000) });
    const res = await get("/v1/lines", expired);
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
    const future = await makeKey(f.accountId, { expiresAt: new Date(Date.now() + 3_600_000) });
    expect((await get("/v1/lines", future)).status).toBe(200);
  });

  it("403 insufficient_scope when the key lacks the route's scope", async () => {
    const f = await makeAccount({ scopes: ["lines:read"] });
    expect((await get("/v1/lines", f.key)).status).toBe(200);
    const res = await get(`/v1/chats?from=${encodeURIComponent(f.line.handle)}`, f.key);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: "authorization_error", code: "insufficient_scope" });
    expect(res.body.error.message).toContain("chats:read");
  });

  it("403 line_not_accessible for a line outside the key's restriction; listing shows only allowed lines", async () => {
    const f = await makeAccount();
    const { createLine } = await import("@/server/services/lines/lines");
    const other = await createLine({ accountId: f.accountId, handle: "+15550009999" });
    const restricted = await makeKey(f.accountId, { lineIds: [f.line.id] });
    const ok = await get(`/v1/chats?from=${encodeURIComponent(f.line.handle)}`, restricted);
    expect(ok.status).toBe(200);
    const denied = await get(`/v1/chats?from=${encodeURIComponent(other.handle)}`, restricted);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("line_not_accessible");
    const lines = await get("/v1/lines", restricted);
    const handles = lines.body.data.map((l: { handle: string }) => l.handle);
    expect(handles).toContain(f.line.handle);
    expect(handles).not.toContain(other.handle);
    expect(lines.body.data.some((l: { is_sandbox: boolean }) => l.is_sandbox)).toBe(true);
  });

  it("sandbox: not activated, and requires an owner", async () => {
    const f = await makeAccount();
    const lines = await get("/v1/lines", f.key);
    const sandbox = lines.body.data.find((l: { is_sandbox: boolean }) => l.is_sandbox);
    const res = await get(`/v1/chats?from=${encodeURIComponent(sandbox.handle)}`, f.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("sandbox_not_activated");

    const ownerless = await makeAccount({ noOwner: true });
    const res2 = await get(`/v1/chats?from=${encodeURIComponent(sandbox.handle)}`, ownerless.key);
    expect(res2.status).toBe(403);
    expect(res2.body.error.code).toBe("sandbox_requires_owner");
    const state = await get("/v1/sandbox", ownerless.key);
    expect(state.status).toBe(403);
    expect(state.body.error.code).toBe("sandbox_requires_owner");
  });

  it("the key is checked before anything else (no 404 leak without a key)", async () => {
    const res = await call("GET", "/v1/chats?from=%2B15550000000");
    expect(res.status).toBe(401);
  });
});
