import { describe, expect, it } from "vitest";
import { SCOPES } from "@/server/services/access/scopes";
import { ERROR_CODES } from "@/server/kernel/errors";
import type { Operation } from "@/server/services/operation";
import { OPERATIONS } from "@/server/services/operations";
import { PROVIDER_NAMES } from "@/server/platform/registry";
import { LINE_PROVIDERS } from "@/server/wire/responses";
import { call, get, inbound, makeAccount, makeKey, phone, post } from "./helpers";

// The API reference is derived from the operations' declarations (server/services/operations.ts):
// the document must be valid and cover every operation, and real answers must match it.

const ops = Object.values(OPERATIONS) as Operation[];

describe("the OpenAPI document", () => {
  it("every operation with a scope refuses a key without it", async () => {
    const f = await makeAccount();
    for (const op of ops) {
      if (!op.scope) continue;
      const key = await makeKey(f.accountId, { scopes: SCOPES.filter((s) => s !== op.scope) });
      const res = await call(op.method, op.path, { key, ...(op.method === "GET" ? {} : { body: {} }) });
      expect(res.body.error?.code, `${op.method} ${op.path}`).toBe("insufficient_scope");
    }
  });

  it("is served at /v1/openapi.json without a key: OpenAPI 3.1, every reference resolves, every error code listed", async () => {
    const res = await get("/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.values(doc.paths).flatMap((p) => Object.keys(p as object))).toHaveLength(ops.length);
    for (const op of ops) expect(doc.paths[op.path]?.[op.method.toLowerCase()]?.summary, `${op.method} ${op.path}`).toBe(op.summary);
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(doc.components.schemas[ref], ref).toBeDefined();
    expect(Object.keys(doc["x-error-codes"]).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [, methods] of Object.entries(doc.paths)) {
      for (const op of Object.values(methods as Record<string, { responses: Record<string, unknown>; "x-codeSamples": unknown[] }>)) {
        expect(Object.keys(op.responses).some((s) => Number(s) < 400)).toBe(true);
        expect(op.responses["401"]).toBeDefined();
        expect(op["x-codeSamples"]).toHaveLength(1);
      }
    }
    expect(Object.keys(doc.webhooks)).toContain("message.received");
  });

  it("lists, per operation and status, every code the server can answer (including the two a validating proxy answers itself)", async () => {
    const doc = (await get("/v1/openapi.json")).body;
    const codesAt = (op: { responses: Record<string, { content?: { "application/json": { schema: { allOf: [unknown, { properties: { error: { properties: { code: { enum: string[] } } } } }] } } } }> }, status: number) =>
      op.responses[String(status)]?.content?.["application/json"].schema.allOf[1].properties.error.properties.code.enum ?? [];
    for (const o of ops) {
      const op = doc.paths[o.path][o.method.toLowerCase()];
      const name = `${o.method} ${o.path}`;
      expect(codesAt(op, 401), name).toEqual(expect.arrayContaining(["missing_api_key", "invalid_api_key"]));
      // Headers over Node's limit are refused before any route runs, whatever the operation.
      expect(codesAt(op, 431), name).toEqual(["request_headers_too_large"]);
      expect(op.responses["431"].description, name).toBe("Request headers too large: `request_headers_too_large`");
      if (o.body) expect(codesAt(op, 400), name).toEqual(expect.arrayContaining(["invalid_json", "invalid_parameter_value"]));
      if (o.method === "POST") {
        expect(codesAt(op, 400), name).toEqual(expect.arrayContaining(["invalid_parameter_value", "idempotency_key_reused"]));
        expect(codesAt(op, 409), name).toEqual(expect.arrayContaining(["idempotency_key_in_use"]));
        const header = op.parameters.find((p: { name: string }) => p.name === "Idempotency-Key");
        const pattern = new RegExp(header.schema.pattern);
        for (const ok of ["a", "550e8400-e29b-41d4-a716-446655440000", "~".repeat(255)]) expect(pattern.test(ok), ok).toBe(true);
        for (const bad of ["", "two words", "caf\u00e9", "tab\there", "x".repeat(256)]) expect(pattern.test(bad), bad).toBe(false);
      }
      // A success body carries request_id, and may gain fields.
      const success = Object.entries(op.responses).find(([s]) => Number(s) < 300)?.[1] as { content?: Record<string, { schema: { allOf?: { $ref?: string }[] } }> };
      if (success?.content?.["application/json"]) expect(success.content["application/json"].schema.allOf?.[1]?.$ref, name).toBe("#/components/schemas/RequestId");
    }
    expect(JSON.stringify(doc.components.schemas)).not.toContain('"additionalProperties":false');
  });

  it("names every provider a line can have", async () => {
    expect([...LINE_PROVIDERS].sort()).toEqual([...PROVIDER_NAMES].sort());
    const doc = (await get("/v1/openapi.json")).body;
    expect(doc.components.schemas.Line.properties.provider.enum.sort()).toEqual([...PROVIDER_NAMES].sort());
  });

  it("describes real responses: each parses with its operation's schema", async () => {
    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "schema check");
    const q = (o: Record<string, string>) => `?${new URLSearchParams(o)}`;
    const hook = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const samples: [Operation, Awaited<ReturnType<typeof call>>][] = [
      [OPERATIONS.listLines, await get("/v1/lines", f.key)],
      [OPERATIONS.listChats, await get(`/v1/chats${q({ from: f.line.handle })}`, f.key)],
      [OPERATIONS.listMessages, await get(`/v1/messages${q({ from: f.line.handle })}`, f.key)],
      [OPERATIONS.listMessages, await get(`/v1/messages${q({ id: m.id })}`, f.key)],
      [OPERATIONS.sendMessage, await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "hi" })],
      [OPERATIONS.listReactions, await get(`/v1/reactions${q({ message_id: m.id })}`, f.key)],
      [OPERATIONS.listTyping, await get(`/v1/typing${q({ from: f.line.handle, to: alice })}`, f.key)],
      [OPERATIONS.listReceipts, await get(`/v1/receipts${q({ from: f.line.handle, to: alice })}`, f.key)],
      [OPERATIONS.getOutbox, await get("/v1/outbox", f.key)],
      [OPERATIONS.getSandbox, await get("/v1/sandbox", f.key)],
      [OPERATIONS.createWebhook, hook],
      [OPERATIONS.listWebhooks, await get("/v1/webhooks", f.key)],
      [OPERATIONS.listDeliveries, await get(`/v1/webhooks/deliveries${q({ webhook_id: hook.body.id })}`, f.key)],
      [OPERATIONS.deleteWebhook, await call("DELETE", "/v1/webhooks", { key: f.key, body: { id: hook.body.id } })],
      [OPERATIONS.uploadFile, await call("POST", "/v1/files", { key: f.key, raw: "hello", headers: { "content-type": "text/plain" } })],
    ];
    for (const [op, res] of samples) {
      expect(res.status, `${op.method} ${op.path}`).toBe(op.status ?? 200);
      const { request_id, ...body } = res.body;
      expect(request_id).toMatch(/^req_/);
      const parsed = op.response!.safeParse(body);
      expect(parsed.success, `${op.method} ${op.path}: ${parsed.error?.message}`).toBe(true);
    }
  });
});
