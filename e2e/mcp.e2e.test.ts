import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caseHeaders, expectAnswer, malformedCases } from "../tests/mcp-cases";
import { type TestServer, testServer } from "./harness";

// The MCP server of `npm start`, black-box: the fuzzer's malformed requests (tests/mcp-cases.ts)
// each get a conforming answer from the start script's own listener, never a 5xx or -32603; a
// body over the limit gets its 413 while the client is still sending; and the SDK's client
// reads results that carry their JSON as text and match each tool's outputSchema.

const MAX_BODY = 1024 * 1024;
const LINE = "+15550008800";
const CONTACT = "+15550008801";

let app: TestServer;
let key = "";
let approvalKey = "";

beforeAll(async () => {
  app = await testServer({ MAX_JSON_BODY_BYTES: String(MAX_BODY), RATE_LIMIT_PER_HOUR: "100000" });
  app.admin("account", "create", "--email", "mcp-e2e@example.com", "--password", "mcp e2e password 1");
  app.admin("line", "create", "--account", "mcp-e2e@example.com", "--handle", LINE, "--advanced");
  key = app.admin("key", "create", "--account", "mcp-e2e@example.com", "--name", "agent");
  approvalKey = app.admin("key", "create", "--account", "mcp-e2e@example.com", "--name", "careful agent", "--require-approval");
  const contactFirst = await fetch(`${app.base}/api/simulator/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ line: LINE, from: CONTACT, text: "hello agent" }),
  });
  expect(contactFirst.status).toBe(201);
});

afterAll(() => app?.dispose());

describe("the MCP server of npm start", () => {
  it("answers every malformed request with a JSON-RPC error and one sentence, a tool result or the envelope: no 5xx, no -32603", async () => {
    const cases = malformedCases(MAX_BODY);
    expect(cases.length).toBeGreaterThan(70);
    for (const c of cases) {
      const res = await fetch(`${app.base}/api/mcp`, { method: c.method, headers: caseHeaders(c, key), body: c.body });
      expectAnswer(c, res.status, res.headers, await res.text());
      // The start script's own listener answered, not Next's router (whose answers vary on rsc).
      expect(res.headers.get("vary") ?? "", c.name).not.toContain("rsc");
    }
  });

  it("answers a body over the limit with 413 and the envelope while the client is still sending it, declared or chunked", async () => {
    const big = Buffer.alloc(MAX_BODY * 24, 0x20);
    for (const headers of [{ "content-length": String(big.length) }, { "transfer-encoding": "chunked" }]) {
      const answer = await new Promise<{ status: number; body: string; error: string | null }>((resolve) => {
        let error: string | null = null;
        const req = http.request(
          `${app.base}/api/mcp`,
          { method: "POST", agent: false, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } },
          (res) => {
            let body = "";
            res.on("data", (d: Buffer) => (body += d.toString()));
            // A reset would show on the write side (EPIPE, ECONNRESET) just after the answer.
            res.on("end", () => setTimeout(() => resolve({ status: res.statusCode!, body, error }), 300));
          },
        );
        req.on("error", (e: NodeJS.ErrnoException) => {
          error = e.code ?? e.message;
          resolve({ status: 0, body: "", error });
        });
        req.end(big);
      });
      expect(answer.error, JSON.stringify(headers)).toBeNull();
      expect(answer.status, JSON.stringify(headers)).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "request_too_large" }, request_id: expect.stringMatching(/^req_/) });
    }
  });

  it("gives the SDK's client results whose text holds their JSON, each matching its tool's outputSchema, and a held send in words", async () => {
    const connect = async (k: string) => {
      const client = new Client({ name: "e2e-agent", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.base}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${k}` } } }));
      const { tools } = await client.listTools(); // the client checks every result against these outputSchemas from now on
      expect(tools.every((t) => t.outputSchema?.type === "object")).toBe(true);
      return client;
    };
    const call = async (client: Client, name: string, args: Record<string, unknown>) => {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const [sentence, json] = result.content.map((c) => (c.type === "text" ? c.text : ""));
      expect(JSON.parse(json!), name).toEqual(result.structuredContent);
      return { sentence: sentence!, result };
    };
    const agent = await connect(key);
    const careful = await connect(approvalKey);
    try {
      const read = await call(agent, "read_messages", { from: LINE, to: CONTACT });
      expect(read.sentence).toBe("1 message.");
      expect(read.result.content[1]).toMatchObject({ type: "text", text: expect.stringContaining("hello agent") });
      const refused = await call(agent, "send_message", { from: LINE, to: "+15550000001", text: "x" });
      expect(refused.result).toMatchObject({ isError: true, structuredContent: { error: { code: "contact_has_not_messaged" } } });
      const held = await call(careful, "send_message", { from: LINE, to: CONTACT, text: "may I?" });
      const id = (held.result.structuredContent as { id: string }).id;
      expect(held.sentence).toBe(`Accepted as ${id}: held for the owner's approval; it has not been sent. Follow it with get_outbox_item.`);
      expect((await call(careful, "get_outbox_item", { id })).sentence).toBe(`${id} is held for the owner's approval; it has not been sent.`);
    } finally {
      await Promise.all([agent.close(), careful.close()]);
    }
  });
});
