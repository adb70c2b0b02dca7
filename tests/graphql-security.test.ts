import { getIntrospectionQuery } from "graphql";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { resetConfig } from "@/server/kernel/config";
import { makeAccount, type Fixture } from "./helpers";

// GraphQL introspection policy (GRAPHQL_INTROSPECTION) and CSRF protection of requests
// authenticated by the dashboard's session cookie. next-auth reads the session through Next's
// request scope, which tests do not have: the signed-in session is supplied here instead.

const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));

const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";
const saved = { NODE_ENV: process.env.NODE_ENV, GRAPHQL_INTROSPECTION: process.env.GRAPHQL_INTROSPECTION };

let f: Fixture;
beforeAll(async () => {
  f = await makeAccount();
  session.actor = sessionActorFor(f.accountId);
});
afterAll(() => {
  Object.assign(process.env, { NODE_ENV: saved.NODE_ENV });
  if (saved.GRAPHQL_INTROSPECTION === undefined) delete process.env.GRAPHQL_INTROSPECTION;
  resetConfig();
});

/** The /api/graphql handler of a server started with this environment (production unless told). */
async function serverWith(env: { GRAPHQL_INTROSPECTION?: string; NODE_ENV?: string }) {
  Object.assign(process.env, { NODE_ENV: env.NODE_ENV ?? "production" });
  if (env.GRAPHQL_INTROSPECTION === undefined) delete process.env.GRAPHQL_INTROSPECTION;
  else process.env.GRAPHQL_INTROSPECTION = env.GRAPHQL_INTROSPECTION;
  resetConfig();
  vi.resetModules();
  const { handleGraphQL } = await import("@/server/transports/graphql/yoga");
  return async (init: { query: string; key?: string; headers?: Record<string, string>; method?: "GET" | "POST"; contentType?: string }) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key) headers.authorization = `Bearer ${init.key}`;
    let url = "http://localhost:3000/api/graphql";
    let body: string | undefined;
    if (init.method === "GET") url += `?query=${encodeURIComponent(init.query)}`;
    else {
      headers["content-type"] = init.contentType ?? "application/json";
      body = JSON.stringify({ query: init.query });
    }
    const res = await handleGraphQL(new Request(url, { method: init.method ?? "POST", headers, body }));
    return { status: res.status, headers: res.headers, body: await res.json() };
  };
}

interface SchemaData {
  __schema: { queryType: { name: string }; types: { name: string }[] };
}
interface LinesData {
  lines: { edges: { node: { handle: string } }[] };
}
type Result = {
  status: number;
  headers: Headers;
  body: { data?: Partial<SchemaData & LinesData> | null; errors?: { message: string; extensions: Record<string, unknown> }[] };
};

function expectCode(res: Result, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors?.[0]?.extensions).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
  expect(res.headers.get("request-id")).toBe(res.body.errors?.[0]?.extensions.request_id);
}

/** What GraphQL client generators send (graphql-js's standard introspection query). */
const FULL_INTROSPECTION = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, inputValueDeprecation: true });

function expectSchema(res: Result) {
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  expect(res.body.data?.__schema?.queryType.name).toBe("Query");
  expect(res.body.data?.__schema?.types.map((t) => t.name)).toContain("Message");
}

describe("GraphQL introspection in production (GRAPHQL_INTROSPECTION)", () => {
  it("authenticated (the default): answers callers with a key or session, refuses others with 401 missing_api_key", async () => {
    const gql = await serverWith({});
    expectSchema(await gql({ query: FULL_INTROSPECTION, key: f.key }));
    expectSchema(await gql({ query: FULL_INTROSPECTION, headers: { cookie: COOKIE } }));
    expectCode(await gql({ query: FULL_INTROSPECTION }), 401, "missing_api_key");
    expectCode(await gql({ query: "{ __type(name: \"Message\") { name } }" }), 401, "missing_api_key");
    expect((await serverWith({ GRAPHQL_INTROSPECTION: "authenticated" }).then((g) => g({ query: FULL_INTROSPECTION, key: f.key }))).status).toBe(200);
  });

  it("on: also answers an operation that only introspects without credentials; anything else still needs a key", async () => {
    const gql = await serverWith({ GRAPHQL_INTROSPECTION: "on" });
    expectSchema(await gql({ query: FULL_INTROSPECTION }));
    expectSchema(await gql({ query: FULL_INTROSPECTION, key: f.key }));
    const anonymous = await gql({ query: FULL_INTROSPECTION });
    expect(anonymous.headers.get("request-id")).toMatch(/^req_/);
    expectCode(await gql({ query: "{ __typename lines { edges { node { id } } } }" }), 401, "missing_api_key");
    expectCode(await gql({ query: "mutation { __typename }" }), 401, "missing_api_key");
    expectCode(await gql({ query: "{ __schema { queryType { name } } }", key: "sk_live_abcdefghijklmnopqrstuvwxyz012345" }), 401, "invalid_api_key");
  });

  it("off: refuses __schema and __type with introspection_disabled, keyed or not; __typename still works", async () => {
    const gql = await serverWith({ GRAPHQL_INTROSPECTION: "off" });
    // Like GraphQL's own validation errors: HTTP 200 (application/json), the code in extensions.
    expectCode(await gql({ query: FULL_INTROSPECTION, key: f.key }), 200, "introspection_disabled");
    expectCode(await gql({ query: "{ __type(name: \"Message\") { name } }", headers: { cookie: COOKIE } }), 200, "introspection_disabled");
    expectCode(await gql({ query: FULL_INTROSPECTION }), 401, "missing_api_key");
    const typename = await gql({ query: "{ __typename }", key: f.key });
    expect(typename.body).toMatchObject({ data: { __typename: "Query" } });
  });

  it("an invalid GRAPHQL_INTROSPECTION is a configuration error at start", async () => {
    await expect(serverWith({ GRAPHQL_INTROSPECTION: "public" }).then((gql) => gql({ query: "{ __typename }", key: f.key }))).rejects.toThrow(
      /GRAPHQL_INTROSPECTION/,
    );
  });

  it("refuses introspection that nests lists (an exponentially large answer), keyed or not", async () => {
    const explosive = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }";
    const viaFragment = "{ __schema { types { ...T } } } fragment T on __Type { fields { type { fields { type { interfaces { name } } } } } }";
    for (const mode of ["authenticated", "on"]) {
      const gql = await serverWith({ GRAPHQL_INTROSPECTION: mode });
      for (const query of [explosive, viaFragment]) {
        const res = await gql({ query, key: f.key });
        expectCode(res, 200, "GRAPHQL_VALIDATION_FAILED");
        expect(res.body.errors?.[0]?.message).toMatch(/introspection depth/);
      }
    }
    const gql = await serverWith({ GRAPHQL_INTROSPECTION: "on" });
    for (const query of [explosive, viaFragment]) expectCode(await gql({ query }), 200, "GRAPHQL_VALIDATION_FAILED");
  });
});

describe("GraphQL CSRF protection of the session cookie", () => {
  const query = "{ lines { edges { node { handle } } } }";

  it("refuses a cookie-authenticated request another site could make (GET, form or text/plain POST) with 403 csrf_header_required", async () => {
    const gql = await serverWith({ NODE_ENV: "test" });
    expectCode(await gql({ query, method: "GET", headers: { cookie: COOKIE } }), 403, "csrf_header_required");
    expectCode(await gql({ query, headers: { cookie: COOKIE }, contentType: "text/plain" }), 403, "csrf_header_required");
    expectCode(await gql({ query, headers: { cookie: COOKIE }, contentType: "application/x-www-form-urlencoded" }), 403, "csrf_header_required");
    expectCode(await gql({ query, headers: { cookie: COOKIE }, contentType: "multipart/form-data; boundary=x" }), 403, "csrf_header_required");
    expectCode(await gql({ query: "mutation { activateSandbox { status } }", headers: { cookie: COOKIE }, contentType: "text/plain;charset=UTF-8" }), 403, "csrf_header_required");
  });

  it("answers the session with the x-graphql-yoga-csrf header or a JSON body", async () => {
    const gql = await serverWith({ NODE_ENV: "test" });
    const handles = (res: Result) => res.body.data?.lines?.edges.map((e) => e.node.handle);
    const json = await gql({ query, headers: { cookie: COOKIE } });
    expect(json.status).toBe(200);
    expect(handles(json)).toContain(f.line.handle);
    const header = await gql({ query, method: "GET", headers: { cookie: COOKIE, "x-graphql-yoga-csrf": "1" } });
    expect(header.status).toBe(200);
    expect(handles(header)).toContain(f.line.handle);
  });

  it("leaves API-key requests alone, cookie or not", async () => {
    const gql = await serverWith({ NODE_ENV: "test" });
    for (const headers of [{}, { cookie: COOKIE }] as Record<string, string>[]) {
      const res = await gql({ query, method: "GET", key: f.key, headers });
      expect(res.status).toBe(200);
      expect(res.body.data?.lines?.edges.length).toBeGreaterThan(0);
    }
  });
});
