import { describe, expect, it } from "vitest";
import { call, expectRequestId, get, makeAccount } from "./helpers";

describe("the /v1 HTTP layer", () => {
  it("answers CORS preflight with 204 on any /v1 path", async () => {
    for (const path of ["/v1/messages", "/v1/chats", "/v1/does-not-exist"]) {
      const res = await call("OPTIONS", path);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, PATCH, DELETE, OPTIONS");
      expect(res.headers.get("access-control-allow-headers")).toContain("Authorization");
    }
  });

  it("sets CORS and Request-Id headers on normal responses", async () => {
    const f = await makeAccount();
    const res = await get("/v1/lines", f.key);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-expose-headers")).toContain("Request-Id");
    expectRequestId(res);
  });

  it("unknown routes and unsupported methods get a JSON 404 in the error envelope", async () => {
    const f = await makeAccount();
    for (const [method, path] of [
      ["GET", "/v1/nothing-here"],
      ["POST", "/v1/lines"],
      ["PUT", "/v1/chats"],
      ["PATCH", "/v1/messages"],
      ["DELETE", "/v1/messages"],
    ] as const) {
      const res = await call(method, path, { key: f.key });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error).toMatchObject({ type: "not_found_error", code: "route_not_found" });
      expectRequestId(res);
    }
  });

  it("invalid_json for a body that is not JSON or not an object", async () => {
    const f = await makeAccount();
    for (const raw of ["{not json", "[1,2]", '"text"', "null", "\u0000\u0001binary"]) {
      const res = await call("POST", "/api/simulator/messages", { key: f.key, raw, headers: { "content-type": "application/json" } });
      expect(res.status, raw).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
      expectRequestId(res);
    }
  });

  it("an empty body reports the first missing parameter", async () => {
    const f = await makeAccount();
    const res = await call("POST", "/api/simulator/messages", { key: f.key, raw: "" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "missing_required_parameter", param: "line" });
  });

  it("missing and invalid query parameters name the parameter", async () => {
    const f = await makeAccount();
    const missing = await get("/v1/chats", f.key);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: "missing_required_parameter", param: "from" });
    expect((await get("/v1/messages", f.key)).body.error).toMatchObject({ code: "missing_required_parameter", param: "from" });
    expect((await get("/v1/reactions", f.key)).body.error).toMatchObject({ code: "missing_required_parameter", param: "message_id" });
    expect((await get(`/v1/typing?from=${encodeURIComponent(f.line.handle)}`, f.key)).body.error).toMatchObject({
      code: "missing_required_parameter",
      param: "to",
    });
    for (const limit of ["0", "101", "abc", "1.5", "-3", "1e3"]) {
      const res = await get(`/v1/lines?limit=${limit}`, f.key);
      expect(res.status, limit).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "limit" });
    }
    const badStatus = await get("/v1/outbox?status=done", f.key);
    expect(badStatus.body.error).toMatchObject({ code: "invalid_parameter_value", param: "status" });
    const badCursor = await get("/v1/lines?cursor=not-a-cursor", f.key);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.error).toMatchObject({ code: "invalid_parameter_value", param: "cursor" });
  });

  it("wrong types in bodies are invalid_parameter_value with the field path", async () => {
    const f = await makeAccount();
    const cases: [unknown, string][] = [
      [{ line: 5, from: "+15550000001", text: "x" }, "line"],
      [{ line: f.line.handle, from: "+15550000001", text: 42 }, "text"],
      [{ line: f.line.handle, from: "+15550000001", is_audio_message: "yes", text: "x" }, "is_audio_message"],
      [{ line: f.line.handle, from: "+15550000001", group: { participants: "bob" }, text: "x" }, "group.participants"],
      [{ line: f.line.handle, from: "+15550000001", attachment: { filename: "a", mime_type: "nope", content_base64: "aGk=" } }, "attachment.mime_type"],
    ];
    for (const [body, param] of cases) {
      const res = await call("POST", "/api/simulator/messages", { key: f.key, body });
      expect(res.status, param).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param });
    }
    const reaction = await call("POST", "/api/simulator/reactions", {
      key: f.key,
      body: { line: f.line.handle, from: "+15550000001", message_id: "x", type: "hug", added: true },
    });
    expect(reaction.body.error).toMatchObject({ code: "invalid_parameter_value", param: "type" });
  });

  it("wrong ID prefixes are invalid_parameter_value", async () => {
    const f = await makeAccount();
    const from = encodeURIComponent(f.line.handle);
    expect((await get("/v1/outbox?id=msg_123", f.key)).body.error).toMatchObject({ code: "invalid_parameter_value", param: "id" });
    expect((await get("/v1/reactions?message_id=cht_01abc", f.key)).body.error).toMatchObject({
      code: "invalid_parameter_value",
      param: "message_id",
    });
    expect((await get(`/v1/messages?from=${from}&to=msg_01abc`, f.key)).body.error).toMatchObject({
      code: "invalid_parameter_value",
      param: "to",
    });
    // The right prefix is an ID of that kind, however it is spelled: it names nothing, so 404
    // (tests/unknown-ids.test.ts goes through every route).
    expect((await get("/v1/reactions?message_id=msg_bad", f.key)).body.error).toMatchObject({ code: "message_not_found", param: "message_id" });
    expect((await get(`/v1/messages?from=${from}&to=cht_nope`, f.key)).body.error).toMatchObject({ code: "chat_not_found", param: "to" });
  });

  it("never answers 5xx to garbage", async () => {
    const f = await makeAccount();
    const garbage = [
      "/v1/chats?from=%00%01",
      "/v1/messages?from=" + "x".repeat(5000),
      "/v1/messages?id=" + "y".repeat(1000),
      "/v1/typing?from=a&to=b&limit=50&cursor=" + "z".repeat(400),
      "/v1/lines?limit=99999999999999999999999",
    ];
    for (const path of garbage) {
      const res = await get(path, f.key);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expectRequestId(res);
    }
  });
});
