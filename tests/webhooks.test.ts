import { afterEach, describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { createLine } from "@/server/services/lines/lines";
import { call, get, gql, makeAccount, makeKey, phone, post } from "./helpers";

const del = (key: string, body: unknown) => call("DELETE", "/v1/webhooks", { key, body });
const q = encodeURIComponent;

afterEach(() => {
  delete process.env.WEBHOOK_ALLOW_INSECURE;
  resetConfig();
});

describe("/v1/webhooks", () => {
  it("creates a webhook with its secret shown once, lists it without the secret, deletes it", async () => {
    const f = await makeAccount();
    const created = await post("/v1/webhooks", f.key, {
      from: f.line.handle,
      url: "https://hooks.example.com/relay",
      events: ["message.received", "message.sent", "message.received"],
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      object: "webhook",
      id: expect.stringMatching(/^wh_/),
      line_ids: [f.line.id],
      url: "https://hooks.example.com/relay",
      events: ["message.received", "message.sent"],
      is_active: true,
      disabled_reason: null,
      created_at: expect.any(Number),
      secret: expect.stringMatching(/^whsec_/),
      request_id: expect.stringMatching(/^req_/),
    });
    const listed = await get("/v1/webhooks", f.key);
    expect(listed.body.data).toEqual([expect.objectContaining({ id: created.body.id, url: "https://hooks.example.com/relay" })]);
    expect(listed.body.data[0]).not.toHaveProperty("secret");
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);

    const deleted = await del(f.key, { id: created.body.id });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.body.id, deleted: true, request_id: expect.stringMatching(/^req_/) });
    expect((await get("/v1/webhooks", f.key)).body.data).toEqual([]);
    const again = await del(f.key, { id: created.body.id });
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ type: "not_found_error", code: "webhook_not_found" });
  });

  it("filters by line, and hides other accounts' and other lines' webhooks", async () => {
    const f = await makeAccount();
    const second = await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true });
    const a = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://a.example.com/h", events: ["message.received"] });
    const b = await post("/v1/webhooks", f.key, { from: second.handle, url: "https://b.example.com/h", events: ["reaction.added"] });
    expect((await get(`/v1/webhooks?from=${q(second.handle)}`, f.key)).body.data.map((w: { id: string }) => w.id)).toEqual([b.body.id]);
    const restricted = await makeKey(f.accountId, { lineIds: [f.line.id] });
    expect((await get("/v1/webhooks", restricted)).body.data.map((w: { id: string }) => w.id)).toEqual([a.body.id]);
    // Another line of the same account: 403 line_not_accessible, as for its messages, chats and
    // files (SPEC.md), on every operation that names the webhook or one of its deliveries.
    const forbidden = [
      await del(restricted, { id: b.body.id }),
      await post("/v1/webhooks/rotate-secret", restricted, { id: b.body.id }),
      await post("/v1/webhooks/disable", restricted, { id: b.body.id }),
      await post("/v1/webhooks/enable", restricted, { id: b.body.id }),
      await post("/v1/webhooks/deliveries/resend", restricted, { webhook_id: b.body.id, since: 0 }),
      await get(`/v1/webhooks/deliveries?webhook_id=${b.body.id}`, restricted),
    ];
    for (const res of forbidden) {
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ type: "authorization_error", code: "line_not_accessible" });
    }
    const graph = await gql(restricted, `query($id: String!) { webhook(id: $id) { id } }`, { id: b.body.id });
    expect(graph.body.errors[0].extensions).toMatchObject({ code: "line_not_accessible" });
    expect((await get("/v1/webhooks", f.key)).body.data).toHaveLength(2);

    const other = await makeAccount();
    expect((await get("/v1/webhooks", other.key)).body.data).toEqual([]);
    expect((await del(other.key, { id: a.body.id })).body.error.code).toBe("webhook_not_found");
    expect((await post("/v1/webhooks", other.key, { from: f.line.handle, url: "https://x.example.com", events: ["message.sent"] })).body.error.code).toBe(
      "line_not_found",
    );
  });

  it("rejects events that are not delivered or unknown, bad URLs, and missing fields", async () => {
    const f = await makeAccount();
    const base = { from: f.line.handle, url: "https://hooks.example.com/relay" };
    for (const events of [["typing.started"], ["typing.stopped"], ["receipt.read"], ["message.deleted"], []]) {
      const res = await post("/v1/webhooks", f.key, { ...base, events });
      expect(res.status, JSON.stringify(events)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "events" });
    }
    expect((await post("/v1/webhooks", f.key, { ...base, events: ["message.failed"] })).status).toBe(200);
    expect((await post("/v1/webhooks", f.key, { from: f.line.handle, events: ["message.sent"] })).body.error).toMatchObject({
      code: "missing_required_parameter",
      param: "url",
    });
    expect((await del(f.key, {})).body.error).toMatchObject({ code: "missing_required_parameter", param: "id" });
    // SPEC.md: a wrong ID prefix is invalid_parameter_value; a wh_ ID that names nothing is webhook_not_found.
    expect((await del(f.key, { id: "msg_123" })).body.error).toMatchObject({ code: "invalid_parameter_value", param: "id" });
    expect((await del(f.key, { id: "wh_123" })).body.error).toMatchObject({ code: "webhook_not_found", param: "id" });

    process.env.WEBHOOK_ALLOW_INSECURE = "false";
    resetConfig();
    for (const url of ["http://hooks.example.com/relay", "https://127.0.0.1/h", "https://169.254.169.254/latest", "https://localhost/h", "https://[::1]/h", "https://10.1.2.3/", "not a url", "ftp://x.example.com"]) {
      const res = await post("/v1/webhooks", f.key, { ...base, url, events: ["message.sent"] });
      expect(res.status, url).toBe(400);
      expect(res.body.error, url).toMatchObject({ code: "invalid_parameter_value", param: "url" });
      if (/127\.0|169\.254|::1|10\.1|localhost/.test(url)) {
        expect(res.body.error.message, url).toMatch(/^destination not allowed/);
        expect(res.body.error.message, url).not.toMatch(/127\.0\.0\.1|169\.254|::1|10\.1\.2\.3/);
      }
      // What the switch would allow, the answer says how to allow it for local testing; what it would not, it does not.
      if (url.startsWith("http")) expect(res.body.error.message, url).toContain("WEBHOOK_ALLOW_INSECURE=true");
      else expect(res.body.error.message, url).not.toContain("WEBHOOK_ALLOW_INSECURE");
    }
    const plain = await post("/v1/webhooks", f.key, { ...base, url: "http://hooks.example.com/relay", events: ["message.sent"] });
    expect(plain.body.error.message).toBe(
      "url must use https. For local testing, the server's operator can allow http:// and local addresses with WEBHOOK_ALLOW_INSECURE=true (never in production).",
    );
    process.env.WEBHOOK_ALLOW_INSECURE = "true";
    resetConfig();
    expect((await post("/v1/webhooks", f.key, { ...base, url: "http://127.0.0.1:4000/hook", events: ["message.sent"] })).status).toBe(200);
  });

  it("needs webhooks:read to list and webhooks:write to create and delete", async () => {
    const f = await makeAccount();
    const readOnly = await makeKey(f.accountId, { scopes: ["webhooks:read"] });
    const res = await post("/v1/webhooks", readOnly, { from: f.line.handle, url: "https://h.example.com", events: ["message.sent"] });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("insufficient_scope");
    expect((await get("/v1/webhooks", readOnly)).status).toBe(200);
    const noRead = await makeKey(f.accountId, { scopes: ["messages:read"] });
    expect((await get("/v1/webhooks", noRead)).body.error.code).toBe("insufficient_scope");
    expect((await del(noRead, { id: "wh_x" })).body.error.code).toBe("insufficient_scope");
  });
});
