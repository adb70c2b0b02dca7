import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { type TestServer, testServer } from "./harness";

// Connecting a line to BlueBubbles from the lines page, in Chromium against `next start`: an
// owner signs in, creates a simulated line, fills "Connect a line" with the address and
// password of a scripted BlueBubbles server on loopback, tests the connection (connected,
// Private API), and switches the line back to simulated. The password is never shown again.

const ARTIFACTS = path.resolve("e2e/artifacts");
const BB_PASSWORD = `bb-e2e-${randomBytes(8).toString("hex")}`;
const SERVER_INFO = {
  computer_id: "x",
  os_version: "15.5",
  server_version: "1.9.9",
  private_api: true,
  helper_connected: true,
  proxy_service: null,
  detected_icloud: "me@icloud.com",
  detected_imessage: "me@icloud.com",
  macos_time_sync: null,
  local_ipv4s: [],
  local_ipv6s: [],
};

/** A scripted BlueBubbles Server: server info, webhook registration, an empty catch-up; 401 for a wrong password. */
const hooks: { id: number; url: string; events: string[]; created: string }[] = [];
const bb = http.createServer((req, res) => {
  let raw = "";
  req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
  req.on("end", () => {
    const url = new URL(req.url ?? "/", "http://bb.local");
    const send = (status: number, json: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
    if (url.searchParams.get("password") !== BB_PASSWORD) {
      return send(401, { status: 401, message: "You are not authorized to access this resource", error: { type: "Authentication Error", message: "Unauthorized" } });
    }
    if (req.method === "GET" && url.pathname === "/api/v1/server/info") return send(200, { status: 200, message: "Success", data: SERVER_INFO });
    if (req.method === "GET" && url.pathname === "/api/v1/webhook") return send(200, { status: 200, message: "Success", data: hooks });
    if (req.method === "POST" && url.pathname === "/api/v1/webhook") {
      const body = JSON.parse(raw) as { url: string; events: string[] };
      const hook = { id: hooks.length + 1, url: body.url, events: body.events, created: "2026-11-24T00:00:00.000Z" };
      hooks.push(hook);
      return send(200, { status: 200, message: "Successfully created webhook!", data: hook });
    }
    // Catch-up after connecting: nothing was missed.
    if (req.method === "POST" && url.pathname === "/api/v1/message/query") {
      return send(200, { status: 200, message: "Success", data: [], metadata: { offset: 0, limit: 500, total: 0, count: 0 } });
    }
    const del = /^\/api\/v1\/webhook\/(\d+)$/.exec(url.pathname);
    if (req.method === "DELETE" && del) {
      hooks.splice(hooks.findIndex((h) => h.id === Number(del[1])) >>> 0, 1);
      return send(200, { status: 200, message: "Successfully deleted webhook!" });
    }
    return send(404, { status: 404, message: "Not Found", error: { type: "Not Found", message: "Route not found" } });
  });
});

let app: TestServer;
let page: Page;
let bbUrl = "";
const email = `connect-${Date.now()}@example.com`;
const password = "a long enough password";

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  app = await testServer();
  await new Promise<void>((resolve) => bb.listen(0, "127.0.0.1", resolve));
  bbUrl = `http://127.0.0.1:${(bb.address() as AddressInfo).port}`;
  page = await browser.newPage({ baseURL: app.base });
});

test.afterAll(async () => {
  await page?.close();
  bb.closeAllConnections();
  await new Promise<void>((resolve) => bb.close(() => resolve()));
  await app?.dispose();
});

test.describe("connecting a line in Chromium", () => {
  test("signs in and creates a simulated line", async () => {
    app.admin("account", "create", "--email", email, "--password", password);
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("heading", { name: /Welcome/ })).toBeVisible();
    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Lines", exact: true }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Lines", exact: true })).toBeVisible();
    await page.getByRole("button", { name: "Create line" }).click();
    await expect(page.locator("td .mono", { hasText: "+155501" }).first()).toBeVisible();
    // A new line is simulated and connected.
    await expect(page.getByRole("row").filter({ hasText: "+155501" }).first()).toContainText("Simulated");
  });

  test("connects it to BlueBubbles: Test connection shows connected and the Private API; the password is cleared", async () => {
    const form = page.getByRole("form", { name: "Connect a line" });
    await expect(form).toBeVisible();
    await form.getByLabel("Provider").selectOption("bluebubbles");
    await form.getByLabel("Server URL").fill(bbUrl);
    await form.getByLabel("Password").fill(BB_PASSWORD);
    await form.getByLabel("Send timeout (seconds)").fill("60");
    await form.getByRole("button", { name: "Test connection" }).click();

    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection OK");
    await expect(result.getByTestId("line-health")).toHaveText("connected");
    await expect(result.getByRole("list", { name: "Capabilities" }).getByRole("listitem").filter({ hasText: /^Private API:/ })).toContainText("yes");
    await expect(result.getByRole("list", { name: "Capabilities" })).toContainText("Reactions: yes");
    await expect(form.getByLabel("Password")).toHaveValue("");
    await page.screenshot({ path: path.join(ARTIFACTS, "connect-line.png"), fullPage: true });

    // The table shows the provider, its (unmasked) URL, the health and the last event.
    const row = page.getByRole("row").filter({ hasText: "+155501" }).first();
    await expect(row).toContainText("BlueBubbles");
    await expect(row).toContainText(bbUrl);
    await expect(row.getByTestId("line-health")).toHaveText("connected");
    await expect(row).not.toContainText("Last event: —");
    expect(hooks.some((h) => h.url.includes("/api/inbound/ln_"))).toBe(true);

    // The password is nowhere on the page, nor after a reload (the server never returns it).
    expect(await page.content()).not.toContain(BB_PASSWORD);
    await page.reload();
    await expect(page.getByRole("row").filter({ hasText: "+155501" }).first()).toContainText("BlueBubbles");
    expect(await page.content()).not.toContain(BB_PASSWORD);

    // Testing the saved connection again needs no password.
    const again = page.getByRole("form", { name: "Connect a line" });
    await expect(again.getByLabel("Server URL")).toHaveValue(bbUrl);
    await again.getByRole("button", { name: "Test connection" }).click();
    await expect(page.getByTestId("connection-result")).toContainText("Connection OK");
  });

  test("a wrong password: Connection failed with the reason, and the line is degraded", async () => {
    const form = page.getByRole("form", { name: "Connect a line" });
    await form.getByLabel("Password").fill("not-the-password");
    await form.getByRole("button", { name: "Test connection" }).click();
    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection failed");
    await expect(result).toContainText("Authentication Error");
    await expect(result.getByTestId("line-health")).toHaveText("degraded");
    await expect(page.getByRole("row").filter({ hasText: "+155501" }).first().getByTestId("line-health")).toHaveText("degraded");
  });

  test("switches the line back to simulated", async () => {
    const form = page.getByRole("form", { name: "Connect a line" });
    await form.getByLabel("Provider").selectOption("simulated");
    await expect(form.getByLabel("Password")).toHaveCount(0);
    await form.getByRole("button", { name: "Switch to simulated" }).click();
    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection OK");
    await expect(result.getByTestId("line-health")).toHaveText("connected");
    const row = page.getByRole("row").filter({ hasText: "+155501" }).first();
    await expect(row).toContainText("Simulated");
    await expect(row).not.toContainText(bbUrl);
  });
});
