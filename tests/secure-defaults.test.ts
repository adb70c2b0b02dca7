import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig, resetConfig } from "@/server/kernel/config";
import { call, db, makeAccount, phone, post } from "./helpers";
import { captureLog } from "./log-capture";

// Only NODE_ENV=development and test get the insecure conveniences; staging, preview or any
// other value is production-like: no insecure webhook URLs, GraphiQL, introspection,
// development account with a printed key, or simulator, unless an operator turns one on.

describe("config: production-like is anything but development and test", () => {
  it.each([
    ["staging", true],
    ["production", true],
    ["preview", true],
    ["development", false],
    ["test", false],
  ])("NODE_ENV=%s -> isProduction %s, and the insecure defaults follow", (NODE_ENV, productionLike) => {
    const c = parseConfig({ NODE_ENV });
    expect(c.isProduction).toBe(productionLike);
    expect(c.webhookAllowInsecure).toBe(!productionLike);
    expect(c.simulatorEnabled).toBe(!productionLike);
  });

  it("unset NODE_ENV is development; explicit switches win over the default", () => {
    expect(parseConfig({}).isProduction).toBe(false);
    const on = parseConfig({ NODE_ENV: "staging", WEBHOOK_ALLOW_INSECURE: "true", SIMULATOR_ENABLED: "true" });
    expect(on).toMatchObject({ isProduction: true, webhookAllowInsecure: true, simulatorEnabled: true });
    const off = parseConfig({ NODE_ENV: "development", WEBHOOK_ALLOW_INSECURE: "false", SIMULATOR_ENABLED: "0" });
    expect(off).toMatchObject({ isProduction: false, webhookAllowInsecure: false, simulatorEnabled: false });
    expect(() => parseConfig({ SIMULATOR_ENABLED: "yes" })).toThrow(/SIMULATOR_ENABLED/);
  });
});

describe("a server started with NODE_ENV=staging", () => {
  const previous = process.env.NODE_ENV;
  afterEach(() => {
    Object.assign(process.env, { NODE_ENV: previous });
    resetConfig();
    vi.restoreAllMocks();
  });
  const staging = () => {
    Object.assign(process.env, { NODE_ENV: "staging" });
    resetConfig();
  };

  it("creates no development account and prints no key on first start", async () => {
    staging();
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { startServer } = await import("@/server/boot/startup");
    const { stopEngine } = await import("@/server/engine");
    // The banner is a log record.
    const { records } = await captureLog(async () => {
      try {
        await startServer();
      } finally {
        await stopEngine(5_000);
      }
    });
    const banner = records.map((r) => String(r.msg)).join("\n");
    expect(banner).toContain("Create an account, a line and a key with the operator CLI");
    expect(banner).not.toMatch(/sk_(live|test)_/);
    expect(await (await db()).account.count()).toBe(0);
    // A line through a provider, not a simulated one; each command with the settings the CLI must share.
    expect(banner).toContain("line create --account you@example.com --handle +15551234567 --provider bluebubbles --provider-config-file bluebubbles.json");
    expect(banner).not.toMatch(/simulat|--advanced/);
    const command = banner.split("\n").find((l) => l.includes("npm run -s admin -- account create"))!;
    const shared = process.env.DATABASE_URL ? [`DATABASE_URL='${process.env.DATABASE_URL}'`, `DATABASE_SCHEMA=${process.env.DATABASE_SCHEMA}`] : ["DATA_DIR=:memory:"];
    for (const variable of [...shared, "PROVIDER_ALLOW_PRIVATE=true"]) expect(command).toContain(` ${variable} `);
    expect(command).not.toContain("NODE_ENV"); // the CLI's default is production
  });

  it("prints the operator CLI's variables with their secrets masked", async () => {
    const { readyBanner } = await import("@/server/boot/banner");
    const env = { NODE_ENV: "production", DATABASE_URL: "postgresql://relay:s3cret-pw@db.example:5432/relay", DATA_DIR: "/srv/relay", CREDENTIALS_KEY: "k".repeat(40) };
    const banner = readyBanner(parseConfig(env), env, null);
    expect(banner).toContain("database: PostgreSQL at db.example:5432/relay;");
    expect(banner).toContain("  DATABASE_URL='postgresql://relay:****@db.example:5432/relay' DATA_DIR=/srv/relay CREDENTIALS_KEY=**** npm run -s admin -- key create --account you@example.com --name prod");
    expect(banner).toContain("**** stands for this server's secret");
    expect(banner).not.toMatch(/s3cret-pw|kkkk/);
    const dev = readyBanner(parseConfig({ NODE_ENV: "development" }), { NODE_ENV: "development" }, null);
    expect(dev).toContain("  NODE_ENV=development npm run -s admin -- line create --account you@example.com --handle +15550001000 --advanced");
    expect(dev).not.toContain("****");
  });

  it("refuses http:// and loopback webhook URLs", async () => {
    const f = await makeAccount();
    staging();
    const res = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "http://127.0.0.1:9/hook", events: ["message.received"] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "url" });
  });

  it("answers 404 route_not_found at the simulator", async () => {
    const f = await makeAccount();
    staging();
    const res = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone(), text: "hi" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("route_not_found");
    expect((await call("GET", "/api/simulator/messages?line=x", { key: f.key })).status).toBe(404);
  });

  it("serves no GraphiQL page; introspection only for authenticated callers (GRAPHQL_INTROSPECTION's default)", async () => {
    const f = await makeAccount();
    staging();
    vi.resetModules();
    const { handleGraphQL } = await import("@/server/transports/graphql/yoga");
    const html = await handleGraphQL(new Request("http://localhost:3000/api/graphql", { headers: { accept: "text/html" } }));
    expect(html.headers.get("content-type") ?? "").not.toContain("text/html");
    const introspect = (headers: Record<string, string>) =>
      handleGraphQL(
        new Request("http://localhost:3000/api/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ query: "{ __schema { queryType { name } } }" }),
        }),
      ).then((r) => r.json());
    expect((await introspect({ authorization: `Bearer ${f.key}` })).data).toEqual({ __schema: { queryType: { name: "Query" } } });
    const anonymous = await introspect({});
    expect(anonymous.data ?? null).toBeNull();
    expect(anonymous.errors[0].extensions.code).toBe("missing_api_key");
  });
});
