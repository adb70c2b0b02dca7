import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_ROUTE } from "@/server/transports/mcp/http";
import { config } from "@/server/kernel/config";
import { registerFastRoutes } from "@/server/transports/http/fast-routes";
import { caseHeaders, expectAnswer, malformedCases } from "./mcp-cases";
import { dispatch, makeAccount } from "./helpers";

// Malformed requests to /api/mcp (tests/mcp-cases.ts), answered the two ways the server is run:
// the route file, as `npm run dev` serves it, and the start script's fast path (a real
// node:http listener with the table scripts/start.mjs uses). Each answer is a conforming
// JSON-RPC error with one sentence, a tool result, or the /v1 envelope; never -32603, never a
// 5xx; and both ways answer the same. e2e/mcp.e2e.test.ts sends the same cases to `npm start`.

let server: http.Server;
let base = "";

beforeAll(async () => {
  const routes = registerFastRoutes({ "/api/mcp": MCP_ROUTE });
  server = http.createServer((req, res) => {
    const handler = routes.route(req);
    if (!handler) return void res.writeHead(418).end("for Next");
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The answer without what differs from call to call (request IDs, line IDs and times of the fixture are the same). */
const stable = (text: string) => text.replace(/req_[0-9a-z]{26}/g, "req_…");

describe("malformed requests to /api/mcp", () => {
  it("each gets a JSON-RPC error with its own code and one sentence, a tool result or the envelope, the same through the route file and the fast path", async () => {
    const f = await makeAccount();
    const cases = malformedCases(config().MAX_JSON_BODY_BYTES);
    expect(cases.length).toBeGreaterThan(70);
    for (const c of cases) {
      const init = { method: c.method, headers: caseHeaders(c, f.key), body: c.body };
      const viaRoute = await dispatch(new Request("http://localhost:3000/api/mcp", init));
      const routeText = await viaRoute.text();
      expectAnswer(c, viaRoute.status, viaRoute.headers, routeText);
      const viaFast = await fetch(`${base}/api/mcp`, init);
      const fastText = await viaFast.text();
      expectAnswer(c, viaFast.status, viaFast.headers, fastText);
      expect({ status: viaFast.status, body: stable(fastText) }, c.name).toEqual({ status: viaRoute.status, body: stable(routeText) });
    }
  }, 120_000);

  it("answers a body over the limit with 413 and the envelope, while the client is still sending it, then keeps the connection", async () => {
    const f = await makeAccount();
    const size = config().MAX_JSON_BODY_BYTES * 24; // more than the socket buffers take in
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (headers: http.OutgoingHttpHeaders, body: Buffer) =>
      new Promise<{ status: number; json: { error: { code: string }; request_id: string }; error: string | null }>((resolve) => {
        let error: string | null = null;
        const req = http.request(`${base}/api/mcp`, { method: "POST", agent, headers: { authorization: `Bearer ${f.key}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } }, (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d.toString()));
          // The write side's error (EPIPE, ECONNRESET) would come after the answer: wait for it a moment.
          res.on("end", () => setTimeout(() => resolve({ status: res.statusCode!, json: JSON.parse(text), error }), 200));
        });
        req.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
        req.end(body);
      });
    const big = Buffer.alloc(size, 0x20);
    for (const headers of [{ "content-length": big.length }, { "transfer-encoding": "chunked" }]) {
      const answer = await send(headers, big);
      expect(answer, JSON.stringify(headers)).toMatchObject({ status: 413, json: { error: { code: "request_too_large" }, request_id: expect.stringMatching(/^req_/) }, error: null });
    }
    // The same connection answers the next request.
    const next = await send({}, Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })));
    expect(next).toMatchObject({ status: 200, json: { jsonrpc: "2.0", id: 1, result: {} }, error: null });
    agent.destroy();
  }, 60_000);
});
