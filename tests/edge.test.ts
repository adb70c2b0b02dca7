import { describe, expect, it } from "vitest";
import { POST as authPost } from "@/app/api/auth/[...nextauth]/route";
import { sessionActorFor } from "@/server/services/access/session";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { call, dispatch, expectRequestId, gql, inbound, makeAccount, phone, type ApiResult, type Fixture } from "./helpers";

// The HTTP edge: body limits enforced while streaming, input the database cannot store,
// nesting that would overflow the stack, and JSON errors where Next or yoga answered empty.

const MiB = 1024 * 1024;
const json = { "content-type": "application/json" };

/**
 * An endless request body, 64 KiB a chunk, that counts what the server pulled: a limit
 * enforced while streaming stops pulling just past it.
 */
function endlessBody(prefix = '{"text":"') {
  const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(prefix));
    },
    pull(controller) {
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { stream, pulled: () => pulled };
}

function streamed(url: string, stream: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) {
  return new Request(`http://localhost:3000${url}`, {
    method: "POST",
    headers: { ...json, ...headers },
    body: stream,
    duplex: "half",
  } as RequestInit);
}

async function result(response: Response): Promise<ApiResult> {
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const trpcAs = (f: Fixture) => async (request: Request) => result(await handleTrpc(request, async () => sessionActorFor(f.accountId)));

function expectGraphQLError(res: ApiResult, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.errors?.[0]?.extensions, JSON.stringify(res.body)).toMatchObject({ code, request_id: res.headers.get("request-id") });
  expect(res.headers.get("request-id")).toMatch(/^req_/);
}

describe("request bodies are limited while streaming (413)", () => {
  it("a /v1 JSON body over 1 MiB answers 413 request_too_large, from Content-Length unread or as soon as the stream passes it", async () => {
    const f = await makeAccount();
    const declared = await call("POST", "/v1/messages", {
      key: f.key,
      raw: "{}",
      headers: { ...json, "content-length": String(120 * MiB) },
    });
    expect(declared.status).toBe(413);
    expect(declared.body.error).toMatchObject({ type: "invalid_request_error", code: "request_too_large" });
    expectRequestId(declared);

    const body = endlessBody();
    const res = await result(await dispatch(streamed("/v1/messages", body.stream, { authorization: `Bearer ${f.key}` })));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("request_too_large");
    expectRequestId(res);
    expect(body.pulled()).toBeLessThanOrEqual(MiB + 256 * 1024);

    // Just under the limit is read and validated as usual.
    const under = await call("POST", "/api/simulator/messages", {
      key: f.key,
      body: { line: f.line.handle, from: phone(), text: "x".repeat(MiB - 1000) },
    });
    expect(under.status).toBe(400);
    expect(under.body.error).toMatchObject({ code: "invalid_parameter_value", param: "text" });
  });

  it("an upload over the file limit answers 413 file_too_large", async () => {
    const f = await makeAccount();
    const res = await call("POST", "/v1/files", { key: f.key, raw: "x", headers: { "content-length": String(101 * MiB) } });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: "file_too_large" });
  });

  it("GraphQL: a streamed body over 16 MiB answers 413 request_too_large as a GraphQL error (declared: tests/graphql.test.ts)", async () => {
    const f = await makeAccount();
    const body = endlessBody('{"query":"');
    const res = await result(await dispatch(new Request("http://localhost:3000/api/graphql", {
      method: "POST",
      headers: { ...json, authorization: `Bearer ${f.key}` },
      body: body.stream,
      duplex: "half",
    } as RequestInit)));
    expectGraphQLError(res, 413, "request_too_large");
    expect(body.pulled()).toBeLessThanOrEqual(16 * MiB + 256 * 1024);
  });

  it("tRPC: a body over 1 MiB answers 413 request_too_large in tRPC's error shape, before the session is asked for", async () => {
    const f = await makeAccount();
    const body = endlessBody();
    const res = await trpcAs(f)(streamed("/api/trpc/simulator.message", body.stream));
    expect(res.status).toBe(413);
    expect(res.body.error.data).toMatchObject({ code: "request_too_large", httpStatus: 413 });
    expect(res.body.error.data.requestId).toMatch(/^req_/);
    expect(body.pulled()).toBeLessThanOrEqual(MiB + 256 * 1024);
  });

  it("next-auth: a body over 1 MiB answers 413 request_too_large without next-auth reading it", async () => {
    const body = endlessBody("csrfToken=");
    const request = streamed("/api/auth/callback/credentials", body.stream, { "content-type": "application/x-www-form-urlencoded" });
    const res = await result(await authPost(request, { params: Promise.resolve({ nextauth: ["callback", "credentials"] }) }));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: "request_too_large" });
    expectRequestId(res);
    expect(body.pulled()).toBeLessThanOrEqual(MiB + 256 * 1024);
  });
});

describe("strings the database cannot store are 400 invalid_parameter_value", () => {
  const lone = ["\ud800", "a\udc00b", "x\ud83d"];

  it("in /v1 bodies and the simulator (text, from, group participants)", async () => {
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact);
    for (const s of lone) {
      const send = await call("POST", "/v1/messages", { key: f.key, body: { from: f.line.handle, to: contact, text: s } });
      expect(send.status, JSON.stringify(s)).toBe(400);
      expect(send.body.error).toMatchObject({ code: "invalid_parameter_value", param: "text" });
      expectRequestId(send);
    }
    const from = await call("POST", "/api/simulator/messages", { key: f.key, body: { line: f.line.handle, from: "\ud800", text: "x" } });
    expect(from.status).toBe(400);
    expect(from.body.error).toMatchObject({ code: "invalid_parameter_value", param: "from" });
    const group = await call("POST", "/api/simulator/messages", {
      key: f.key,
      body: { line: f.line.handle, from: contact, text: "x", group: { participants: [contact, "+1555\udfff"] } },
    });
    expect(group.status).toBe(400);
    expect(group.body.error).toMatchObject({ code: "invalid_parameter_value", param: "group.participants.1" });
    // A well-formed pair (an emoji) is fine.
    const emoji = await call("POST", "/v1/messages", { key: f.key, body: { from: f.line.handle, to: contact, text: "\ud83d\ude00" } });
    expect(emoji.status).toBe(200);
  });

  it("in GraphQL variables (sendMessage) and tRPC input", async () => {
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact);
    const res = await gql(f.key, "mutation($input: SendMessageInput!) { sendMessage(input: $input) { id } }", {
      input: { from: f.line.handle, to: contact, text: "\ud800" },
    });
    expect(res.body.errors?.[0]?.extensions).toMatchObject({ code: "invalid_parameter_value", param: "text" });
    const trpc = await trpcAs(f)(new Request("http://localhost/api/trpc/simulator.message", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ line: f.line.handle, from: "\ud800", text: "x" }),
    }));
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "from" });
  });
});

describe("JSON nested thousands of levels deep is 400 invalid_json, not a stack overflow", () => {
  const deepArray = (n: number) => `{"text":${"[".repeat(n)}${"]".repeat(n)}}`;
  const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

  it("on /v1 and the simulator", async () => {
    const f = await makeAccount();
    for (const raw of [deepArray(5000), deepArray(10_000), deepObject(10_000)]) {
      for (const path of ["/v1/messages", "/v1/webhooks", "/api/simulator/messages"]) {
        const res = await call("POST", path, { key: f.key, raw, headers: json });
        expect(res.status, `${path} ${raw.length}`).toBe(400);
        expect(res.body.error).toMatchObject({ code: "invalid_json" });
        expectRequestId(res);
      }
    }
    // Brackets inside strings do not count.
    const inString = await call("POST", "/api/simulator/messages", { key: f.key, body: { line: f.line.handle, from: phone(), text: "[".repeat(10_000) } });
    expect(inString.status).toBe(201);
  });

  it("in GraphQL variables (POST and GET), GraphQL documents, and tRPC input", async () => {
    const f = await makeAccount();
    const post = await call("POST", "/api/graphql", {
      key: f.key,
      raw: `{"query":"{ sandbox { status } }","variables":{"x":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`,
      headers: json,
    });
    expectGraphQLError(post, 400, "invalid_json");
    const get = await call("GET", `/api/graphql?query=${encodeURIComponent("{ sandbox { status } }")}&variables=${"[".repeat(5000)}${"]".repeat(5000)}`, { key: f.key });
    expectGraphQLError(get, 400, "invalid_json");
    const brokenVariables = await call("GET", `/api/graphql?query=${encodeURIComponent("{ sandbox { status } }")}&variables=%7B`, { key: f.key });
    expectGraphQLError(brokenVariables, 400, "invalid_json");
    const document = await gql(f.key, `{${"a{".repeat(10_000)}${"}".repeat(10_001)}`);
    expectGraphQLError(document, 400, "query_too_complex");
    const list = await gql(f.key, `{ chats(from: ${"[".repeat(10_000)}${"]".repeat(10_000)}) { edges { node { id } } } }`);
    expectGraphQLError(list, 400, "query_too_complex");

    const trpc = trpcAs(f);
    const deep = await trpc(new Request("http://localhost/api/trpc/simulator.message", { method: "POST", headers: json, body: deepArray(10_000) }));
    expect(deep.status).toBe(400);
    expect(deep.body.error.data).toMatchObject({ code: "invalid_json" });
    const url = new URL("http://localhost/api/trpc/simulator.inbox");
    url.searchParams.set("input", deepObject(5000));
    const deepGet = await trpc(new Request(url));
    expect(deepGet.status).toBe(400);
    expect(deepGet.body.error.data).toMatchObject({ code: "invalid_json" });
  });

  it("a GraphQL operation of more than 10,000 tokens is refused by the parser quickly", async () => {
    const f = await makeAccount();
    const started = Date.now();
    const res = await gql(f.key, `{ sandbox { ${"status ".repeat(200_000)}} }`);
    expect(res.body.errors?.[0]?.extensions).toMatchObject({ code: "GRAPHQL_PARSE_FAILED" });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe("JSON errors where Next or yoga answered an empty or HTML body", () => {
  it("GET /v1 and unsupported methods on /v1/openapi.json answer 404 route_not_found", async () => {
    for (const [method, path] of [
      ["GET", "/v1"],
      ["POST", "/v1"],
      ["PUT", "/v1/openapi.json"],
      ["POST", "/v1/openapi.json"],
      ["DELETE", "/v1/openapi.json"],
    ] as const) {
      const res = await call(method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body?.error, `${method} ${path}`).toMatchObject({ type: "not_found_error", code: "route_not_found" });
      expectRequestId(res);
    }
    expect((await call("GET", "/v1/openapi.json")).status).toBe(200);
    expect((await call("OPTIONS", "/v1/openapi.json")).status).toBe(204);
  });

  it("GraphQL answers a wrong Content-Type with 415 unsupported_media_type as a JSON error, and other methods with 405 JSON", async () => {
    const f = await makeAccount();
    for (const headers of [{ "content-type": "text/plain" }, {} as Record<string, string>, { "content-type": "multipart/form-data; boundary=x" }, { "content-type": "application/x-www-form-urlencoded" }]) {
      const res = await call("POST", "/api/graphql", { key: f.key, raw: "query=%7Bsandbox%7Bstatus%7D%7D", headers });
      expectGraphQLError(res, 415, "unsupported_media_type");
      expect(res.body.errors[0].extensions.type).toBe("invalid_request_error");
    }
    const put = await call("PUT", "/api/graphql", { key: f.key, body: { query: "{ sandbox { status } }" } });
    expectGraphQLError(put, 405, "BAD_REQUEST");
    const ok = await call("POST", "/api/graphql", { key: f.key, raw: JSON.stringify({ query: "{ sandbox { status } }" }), headers: { "content-type": "application/graphql+json; charset=utf-8" } });
    expect(ok.body).toEqual({ data: { sandbox: { status: "missing" } } });
  });
});
