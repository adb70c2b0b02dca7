import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { type TestServer, testServer } from "./harness";
import { signIn } from "./sign-in";

// The dashboard in Debian's Chromium against `next start`: sign up, keys, lines, the
// simulator, a conversation, webhooks, outbox and sandbox, as a person uses them. One page
// goes through the steps in order; a screenshot of each main page is saved in e2e/artifacts/.

const ARTIFACTS = path.resolve("e2e/artifacts");

let app: TestServer;
let page: Page;
const hits: { path: string; body: string }[] = [];
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    hits.push({ path: req.url ?? "", body });
    res.writeHead(200).end("ok");
  });
});

const email = `owner-${Date.now()}@example.com`;
const password = "a long enough password";
let apiKey = "";
let lineHandle = "";

const HEADINGS: Record<string, string> = {
  "API keys": "API keys",
  Lines: "Lines",
  Simulator: "Simulator",
  Inbox: "Inbox",
  Webhooks: "Webhooks",
  Outbox: "Outbox",
  Sandbox: "Sandbox",
};
/** Follows a sidebar link and waits for the page's heading. */
async function go(name: string) {
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name, exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: HEADINGS[name], exact: true })).toBeVisible();
}
const shot = (name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  app = await testServer({ WEBHOOK_ALLOW_INSECURE: "true" });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  page = await browser.newPage({ baseURL: app.base });
});

test.afterAll(async () => {
  await page?.close();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await app?.dispose();
});

test.describe("dashboard in Chromium", () => {
  test("sends a signed-out visitor to sign in, and signs up a new owner", async () => {
    await page.goto("/dashboard");
    await expect(page).toHaveURL(/\/sign-in/);
    await page.getByRole("link", { name: "Sign up" }).click();
    await page.getByLabel("Name (optional)").fill("Ada");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign up" }).click();
    await expect(page.getByRole("heading", { name: "Welcome, Ada" })).toBeVisible();
    await shot("overview");
  });

  test("creates an API key, shows it once, and the key works on /v1", async () => {
    await go("API keys");
    await page.getByLabel("Name").fill("e2e key");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = page.getByTestId("secret");
    await expect(secret).toContainText("sk_live_");
    apiKey = (await secret.textContent())!.trim();
    await shot("keys-secret-once");
    await page.getByRole("button", { name: "Done" }).click();
    await expect(page.getByRole("cell", { name: "e2e key" })).toBeVisible();
    await page.reload();
    await expect(page.getByRole("cell", { name: "e2e key" })).toBeVisible();
    expect(await page.content()).not.toContain(apiKey);
    await shot("keys");
    const res = await fetch(`${app.base}/v1/lines`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status).toBe(200);
  });

  test("creates a simulated line", async () => {
    await go("Lines");
    await page.getByLabel("Label", { exact: true }).first().fill("Support");
    await page.getByRole("button", { name: "Create line" }).click();
    const cell = page.locator("td .mono", { hasText: "+155501" }).first();
    await expect(cell).toBeVisible();
    lineHandle = (await cell.textContent())!.trim();
    await shot("lines");
  });

  test("receives a simulated inbound message, shows it in the conversation, and sends a reply from the page", async () => {
    await go("Simulator");
    await page.getByLabel("Message", { exact: true }).fill("Hello from the phone");
    await page.getByRole("button", { name: "Send to line" }).click();
    await expect(page.getByText(/Delivered to the line as msg_/)).toBeVisible();
    await shot("simulator");

    await go("Inbox");
    await page.getByRole("link", { name: /\+15551230001/ }).click();
    const conversation = page.getByTestId("conversation");
    await expect(conversation.getByText("Hello from the phone")).toBeVisible();
    await page.getByLabel("Message", { exact: true }).fill("Hi from the dashboard");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    // Accepted as pending, then delivered by the runner: the bubble becomes a sent message.
    await expect(conversation.getByTestId("message").filter({ hasText: "Hi from the dashboard" })).toContainText("Sent");
    await shot("conversation");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot("conversation-phone-width");
    await page.setViewportSize({ width: 1280, height: 860 });

    // The virtual phone received it.
    await go("Simulator");
    await expect(page.getByTestId("phone-inbox")).toContainText("Hi from the dashboard");
  });

  test("creates a webhook, shows its secret once, and lists its deliveries with attempts", async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await go("Webhooks");
    await page.getByLabel("URL").fill(url);
    await page.getByRole("button", { name: "Add webhook" }).click();
    await expect(page.getByTestId("secret")).toContainText("whsec_");
    await page.getByRole("button", { name: "Done" }).click();
    await shot("webhooks");
    await page.getByRole("link", { name: url }).click();

    const sent = await fetch(`${app.base}/api/simulator/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ line: lineHandle, from: "+15551230001", text: "an event for the webhook" }),
    });
    expect(sent.status).toBe(201);
    const row = page.getByTestId("delivery").filter({ hasText: "message.received" }).first();
    await expect(row).toContainText("succeeded", { timeout: 20_000 });
    await row.getByRole("button", { name: "Attempts" }).click();
    await expect(page.getByRole("cell", { name: "200", exact: true })).toBeVisible();
    expect(hits.some((h) => h.body.includes("an event for the webhook"))).toBe(true);
    await shot("webhook-deliveries");
  });

  test("shows the outbox and the sandbox activation with a QR code", async () => {
    await go("Outbox");
    await expect(page.getByTestId("outbox-item").first()).toContainText("sent");
    await shot("outbox");
    await go("Sandbox");
    await page.getByRole("button", { name: "Get an activation code" }).click();
    await expect(page.getByRole("img", { name: /QR code/ })).toBeVisible();
    await expect(page.getByText(/RELAY-/).first()).toBeVisible();
    await shot("sandbox");
  });

  test("serves the API reference page, generated from the OpenAPI document", async () => {
    const offSite: string[] = [];
    const onRequest = (req: { url(): string }) => {
      if (!req.url().startsWith(app.base) && /^https?:/.test(req.url())) offSite.push(req.url());
    };
    page.on("request", onRequest);
    const res = await page.goto("/docs");
    // Its console takes an API key: it may not be framed, as the dashboard may not.
    expect(res!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res!.headers()["x-frame-options"]).toBe("DENY");
    // Rendered by Scalar from /v1/openapi.json (e2e/inbox.spec.ts checks its Markdown and tables).
    await expect(page.getByRole("heading", { name: "Relay API", exact: true })).toBeVisible();
    await expect(page.getByText("Provider errors and delivery status").first()).toBeVisible();
    // One "Webhooks" group: the webhook endpoints and the events they deliver.
    const sidebar = page.getByLabel("Sidebar for Relay API");
    const webhooks = sidebar.getByRole("button", { name: /^Webhooks\b/ });
    await expect(webhooks).toHaveCount(1);
    await webhooks.click();
    await expect(sidebar.getByText("List webhooks", { exact: true })).toBeVisible();
    await expect(sidebar.getByText("message.received", { exact: true })).toBeVisible();
    // Nothing that needs the internet: no AI agent, no hosted client, no link or request off this server.
    await page.getByRole("button", { name: /Test Request/ }).first().click();
    await expect(page.getByRole("button", { name: /^Send/ }).first()).toBeVisible();
    await expect(page.getByText(/Ask AI|Open API Client|Powered by Scalar/).filter({ visible: true })).toHaveCount(0);
    const links = await page.$$eval("a[href]", (as) => as.filter((a) => a.checkVisibility()).map((a) => (a as HTMLAnchorElement).href));
    expect(links.filter((href) => /^https?:/.test(href) && !href.startsWith(app.base))).toEqual([]);
    page.off("request", onRequest);
    expect(offSite).toEqual([]);
    await shot("api-reference");
    await page.goto("/dashboard");
  });

  test("the signed-in session also reaches GraphQL; signed out it does not", async () => {
    const query = async () =>
      page.evaluate(async () => {
        const res = await fetch("/api/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: "{ lines(first: 10) { edges { node { handle label } } } }" }),
        });
        return { status: res.status, body: await res.json() };
      });
    const signedIn = await query();
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.data.lines.edges.map((e: { node: { handle: string } }) => e.node.handle)).toContain(lineHandle);
    await page.context().clearCookies();
    const signedOut = await query();
    expect(signedOut.status).toBe(401);
    expect(signedOut.body.errors[0].extensions.code).toBe("missing_api_key");
    // Sign in again for the next step.
    await signIn(page, email, password);
  });

  test("signs out, and an account made with the operator CLI can sign in", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/sign-in/);
    await page.goto("/dashboard/keys");
    await expect(page).toHaveURL(/\/sign-in/);

    app.admin("account", "create", "--email", "cli-owner@example.com", "--password", "cli password 123");
    await page.getByLabel("Email").fill("cli-owner@example.com");
    await page.getByLabel("Password").fill("wrong password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByText("Wrong email or password.")).toBeVisible();
    await page.getByLabel("Password").fill("cli password 123");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("heading", { name: "Welcome" })).toBeVisible();
    await expect(page.getByText("Signed in as cli-owner@example.com")).toBeVisible();
  });
});
