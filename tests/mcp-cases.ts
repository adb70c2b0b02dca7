import { expect } from "vitest";
import { z } from "zod";

// Malformed requests to /api/mcp, generated as the fuzzer made them (params missing or of the
// wrong type, a tool name that is no string, arguments that are no object, every kind of id,
// jsonrpc missing or wrong, batches, bodies that are no JSON or too large, other HTTP methods),
// each with the answer it must get. Plain imports only: e2e/mcp.e2e.test.ts sends the same
// cases to `npm start`, tests/mcp-requests.test.ts to the route file and the fast path.

/** What a case must be answered with. */
type Expected =
  /** One JSON-RPC error object with this code, HTTP status and id. */
  | { rpc: number; status: number; id: string | number | null }
  /** A batch's answers, in any order: a JSON-RPC error code, or "result" for a result. */
  | { batch: (number | "result")[] }
  /** A tool result: isError with this /v1 code, or a success. */
  | { tool: "ok" | string; id: string | number }
  /** The /v1 error envelope with this code and HTTP status. */
  | { envelope: string; status: number }
  /** 202 Accepted, no body: only notifications or responses. */
  | { accepted: true };

export interface McpCase {
  name: string;
  method: string;
  body?: string;
  /** Headers besides the key's Authorization and the usual MCP ones (which a value of "" removes). */
  headers?: Record<string, string>;
  expected: Expected;
}

const call = (params?: unknown, extra: Record<string, unknown> = {}) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", ...(params === undefined ? {} : { params }), ...extra });
const LIST = { name: "list_lines", arguments: {} };
const json = (v: unknown) => JSON.stringify(v);
const post = (name: string, body: string, expected: Expected, headers?: Record<string, string>): McpCase => ({ name, method: "POST", body, headers, expected });
const invalidParams: Expected = { rpc: -32602, status: 200, id: 1 };
const invalidRequest = (id: string | number | null = null): Expected => ({ rpc: -32600, status: 400, id });
const notJson: Expected = { rpc: -32700, status: 400, id: null };
const WRONG_TYPES: [string, unknown][] = [["null", null], ["a string", "x"], ["a number", 1], ["a boolean", true], ["an array", []], ["a non-empty array", [1, 2]]];

/** Every case; `maxBodyBytes` is the server's MAX_JSON_BODY_BYTES. */
export function malformedCases(maxBodyBytes: number): McpCase[] {
  return [
    // tools/call params
    post("tools/call without params", json(call()), invalidParams),
    ...WRONG_TYPES.map(([what, v]) => post(`tools/call with params ${what}`, json(call(v)), invalidParams)),
    post("tools/call with params {}", json(call({})), invalidParams),
    ...[...WRONG_TYPES.filter(([, v]) => typeof v !== "string"), ["an object", {}] as [string, unknown]].map(([what, v]) =>
      post(`tools/call with name ${what}`, json(call({ name: v, arguments: {} })), invalidParams),
    ),
    ...WRONG_TYPES.map(([what, v]) => post(`tools/call with arguments ${what}`, json(call({ name: "list_lines", arguments: v })), invalidParams)),
    ...WRONG_TYPES.map(([what, v]) => post(`tools/call with _meta ${what}`, json(call({ ...LIST, _meta: v })), invalidParams)),
    post("tools/call of an unknown tool", json(call({ name: "no_such_tool", arguments: {} })), { tool: "invalid_parameter_value", id: 1 }),
    post("tools/call of the empty name", json(call({ name: "", arguments: {} })), { tool: "invalid_parameter_value", id: 1 }),
    post("tools/call with an argument of the wrong type", json(call({ name: "list_chats", arguments: { from: 42 } })), { tool: "invalid_parameter_value", id: 1 }),
    post("tools/call without arguments", json(call({ name: "list_lines" })), { tool: "ok", id: 1 }),
    // Other methods' params
    post("initialize with params {}", json({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }), invalidParams),
    post("tools/list with a cursor that is no string", json({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 5 } }), invalidParams),
    post("ping with params a string", json({ jsonrpc: "2.0", id: 1, method: "ping", params: "x" }), invalidParams),
    post("an unknown method", json({ jsonrpc: "2.0", id: 1, method: "tools/nope" }), { rpc: -32601, status: 200, id: 1 }),
    // ids
    ...[["null", null], ["a fraction", 1.5], ["a boolean", true], ["an object", {}], ["an array", [1]]].map(([what, v]) =>
      post(`id ${what}`, json(call(LIST, { id: v })), invalidRequest()),
    ),
    ...[["the empty string", ""], ["a string", "abc"], ["zero", 0], ["a negative integer", -7]].map(([what, v]) =>
      post(`id ${what}`, json(call(LIST, { id: v })), { tool: "ok", id: v as string | number }),
    ),
    post("no id: a notification, which gets no answer", json({ jsonrpc: "2.0", method: "tools/call", params: LIST }), { accepted: true }),
    post("a response, which gets no answer", json({ jsonrpc: "2.0", id: 1, result: {} }), { accepted: true }),
    // jsonrpc, method, members
    ...[["missing", undefined], ["1.0", "1.0"], ["a number", 2], ["null", null], ["with a space", "2.0 "]].map(([what, v]) => {
      const { jsonrpc: _, ...rest } = call(LIST);
      return post(`jsonrpc ${what}`, json(v === undefined ? rest : { ...rest, jsonrpc: v }), invalidRequest(1));
    }),
    ...[["missing", undefined], ["a number", 1], ["null", null], ["an object", {}]].map(([what, v]) => {
      const { method: _, ...rest } = call(LIST);
      return post(`method ${what}`, json(v === undefined ? rest : { ...rest, method: v }), invalidRequest(1));
    }),
    post("a member JSON-RPC does not have", json(call(LIST, { extra: 1 })), invalidRequest(1)),
    ...[["a number", 1], ["a string", "x"], ["null", null], ["true", true], ["an empty object", {}]].map(([what, v]) => post(`a body that is ${what}`, json(v), invalidRequest())),
    // Batches
    post("an empty batch", "[]", invalidRequest()),
    post("a batch of a number", "[1]", { batch: [-32600] }),
    post("a batch of one call", json([call(LIST)]), { batch: ["result"] }),
    post("a batch of two calls", json([call(LIST), call(LIST, { id: 2 })]), { batch: ["result", "result"] }),
    post("a batch with bad params beside a good call", json([call(LIST), call({ name: 1 }, { id: 2 })]), { batch: ["result", -32602] }),
    post("a batch with a message that is no JSON-RPC", json([call(LIST), { id: 2 }]), { batch: ["result", -32600] }),
    post("a batch of invalid messages only", json([{ jsonrpc: "1.0", id: 1 }, "x"]), { batch: [-32600, -32600] }),
    post("a batch of a notification", json([{ jsonrpc: "2.0", method: "notifications/initialized" }]), { accepted: true }),
    post("a batch over the SDK's 100 messages", json(Array.from({ length: 101 }, (_, i) => call(LIST, { id: i + 1 }))), invalidRequest()),
    // Bodies that are no JSON, or too large
    post("an empty body", "", notJson),
    post("a truncated object", '{"jsonrpc":"2.0",', notJson),
    post("a bare word", "nul", notJson),
    post("JSON nested 10,000 deep", `${"[".repeat(10_000)}${"]".repeat(10_000)}`, notJson),
    post("a body over MAX_JSON_BODY_BYTES", json(call({ name: "list_lines", arguments: { pad: "x".repeat(maxBodyBytes) } })), { envelope: "request_too_large", status: 413 }),
    // Headers the Streamable HTTP transport requires
    post("Accept without text/event-stream, a good call", json(call(LIST)), { rpc: -32000, status: 406, id: null }, { accept: "application/json" }),
    post("Content-Type text/plain", json(call(LIST)), { rpc: -32000, status: 415, id: null }, { "content-type": "text/plain" }),
    // Other HTTP methods
    ...["PUT", "PATCH", "GET", "DELETE"].map((method): McpCase => ({ name: `${method} /api/mcp`, method, body: method === "GET" ? undefined : json(call(LIST)), expected: { envelope: "method_not_allowed", status: 405 } })),
  ];
}

/** The headers of a case's request. */
export function caseHeaders(c: McpCase, key: string): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...c.headers };
  for (const [k, v] of Object.entries(headers)) if (v === "") delete headers[k];
  return headers;
}

const RpcError = z.object({ jsonrpc: z.literal("2.0"), id: z.union([z.string(), z.number(), z.null()]), error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }) });
const RpcResult = z.object({ jsonrpc: z.literal("2.0"), id: z.union([z.string(), z.number()]), result: z.looseObject({}) });
const ToolResult = z.looseObject({
  content: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(2),
  structuredContent: z.looseObject({ request_id: z.string() }),
  isError: z.boolean().optional(),
});
const Envelope = z.object({ error: z.object({ type: z.string(), code: z.string(), message: z.string(), param: z.string().optional() }), request_id: z.string().regex(/^req_/) });

/** A JSON-RPC error's message: one readable sentence, no validation dump. */
function expectSentence(message: string, name: string) {
  expect(message.length, `${name}: ${message}`).toBeLessThan(300);
  expect(message, name).not.toMatch(/[\n{[]/);
}

/** Checks the answer to `c`: never -32603, never 5xx, always a Request-Id, and what `c.expected` says. */
export function expectAnswer(c: McpCase, status: number, headers: Headers, text: string): void {
  const name = `${c.name}: ${status} ${text.slice(0, 300)}`;
  expect(status, name).toBeLessThan(500);
  expect(headers.get("request-id"), name).toMatch(/^req_/);
  expect(text, name).not.toContain("-32603");
  const e = c.expected;
  if ("accepted" in e) {
    expect([status, text], name).toEqual([202, ""]);
    return;
  }
  const body: unknown = JSON.parse(text);
  if ("envelope" in e) {
    expect(status, name).toBe(e.status);
    expect(Envelope.parse(body).error.code, name).toBe(e.envelope);
    if (status === 405) expect(headers.get("allow"), name).toBe("POST, OPTIONS");
  } else if ("rpc" in e) {
    expect(status, name).toBe(e.status);
    const answer = RpcError.parse(body);
    expect({ code: answer.error.code, id: answer.id }, name).toEqual({ code: e.rpc, id: e.id });
    expectSentence(answer.error.message, name);
  } else if ("tool" in e) {
    expect(status, name).toBe(200);
    const answer = RpcResult.parse(body);
    expect(answer.id, name).toBe(e.id);
    const result = ToolResult.parse(answer.result);
    expect(result.isError === true, name).toBe(e.tool !== "ok");
    // The JSON text block is the structured result, for clients that pass on only the text.
    expect(JSON.parse(result.content.at(-1)!.text), name).toEqual(result.structuredContent);
    if (e.tool !== "ok") expect(Envelope.parse(result.structuredContent).error.code, name).toBe(e.tool);
  } else {
    expect(status, name).toBe(200);
    const answers = z.array(z.union([RpcResult, RpcError])).parse(body);
    const codes = answers.map((a) => ("error" in a ? a.error.code : "result"));
    expect(codes.map(String).sort(), name).toEqual(e.batch.map(String).sort());
    for (const a of answers) if ("error" in a) expectSentence(a.error.message, name);
  }
}
