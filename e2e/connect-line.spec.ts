import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "../tests/fakes/bluebubbles";
import { type TestServer, testServer } from "./harness";
import { signIn } from "./sign-in";

// Connecting a line to BlueBubbles from the lines page, in Chromium against `next start`: an
// owner signs in, creates a simulated line, fills "Connect a line" with the address and
// password of the fake BlueBubbles server (tests/fakes) on loopback, tests the connection (connected,
// Private API), and switches the line back to simulated. The password is never shown again.

const ARTIFACTS = path.resolve("e2e/artifacts");
const BB_PASSWORD = `bb-e2e-${randomBytes(8).toString("hex")}`;
let app: TestServer;
let page: Page;
let bb: FakeBlueBubbles | undefined;
let second: FakeBlueBubbles | undefined;
let bbUrl = "";
const email = `connect-${Date.now()}@example.com`;
/** The line's handle: its simulated number, or once connected the Apple ID the Mac's probe names (the fake's). */
const LINE_HANDLE = /\+155501|fake-owner@icloud\.com/;
const password = "a long enough password";

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // The fake BlueBubbles server is on loopback, as a Mac on the LAN would be on a private address.
  app = await testServer({ PROVIDER_ALLOW_PRIVATE: "true" });
  bb = await startFakeBlueBubbles({ password: BB_PASSWORD, deliver: async () => undefined });
  bbUrl = bb.url;
  page = await browser.newPage({ baseURL: app.base });
});

test.afterAll(async () => {
  await page?.close();
  await bb?.close();
  await second?.close();
  await app?.dispose();
});

test.describe("connecting a line in Chromium", () => {
  test("signs in and creates a simulated line", async () => {
    app.admin("account", "create", "--email", email, "--password", password);
    await signIn(page, email, password);
    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Lines", exact: true }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Lines", exact: true })).toBeVisible();
    // Only once the page is hydrated does the button create a line (before, a click is a plain form submit).
    await page.waitForLoadState("networkidle");
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
    // Moving a line to another provider asks first.
    await form.getByRole("alertdialog", { name: "Confirm the switch" }).getByRole("button", { name: "Test and switch" }).click();

    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection OK");
    await expect(result.getByTestId("line-health")).toHaveText("connected");
    await expect(result.getByRole("list", { name: "Capabilities" }).getByRole("listitem").filter({ hasText: /^Private API:/ })).toContainText("yes");
    await expect(result.getByRole("list", { name: "Capabilities" })).toContainText("Reactions: yes");
    await expect(form.getByLabel("Password")).toHaveValue("");
    await page.screenshot({ path: path.join(ARTIFACTS, "connect-line.png"), fullPage: true });

    // The table shows the provider, its (unmasked) URL, the health and the last event.
    const row = page.getByRole("row").filter({ hasText: LINE_HANDLE }).first();
    await expect(row).toContainText("BlueBubbles");
    await expect(row).toContainText(bbUrl);
    await expect(row.getByTestId("line-health")).toHaveText("connected");
    await expect(row).not.toContainText("Last event: —");
    expect(bb!.webhooks.some((h) => h.url.includes("/api/inbound/ln_"))).toBe(true);

    // The password is nowhere on the page, nor after a reload (the server never returns it).
    expect(await page.content()).not.toContain(BB_PASSWORD);
    await page.reload();
    await expect(page.getByRole("row").filter({ hasText: LINE_HANDLE }).first()).toContainText("BlueBubbles");
    expect(await page.content()).not.toContain(BB_PASSWORD);

    // Testing the saved connection again needs no password.
    const again = page.getByRole("form", { name: "Connect a line" });
    await expect(again.getByLabel("Server URL")).toHaveValue(bbUrl);
    await again.getByRole("button", { name: "Test connection" }).click();
    await expect(page.getByTestId("connection-result")).toContainText("Connection OK");
  });

  test("a wrong password: tested before saving, explained in words, nothing saved until Save anyway", async () => {
    const form = page.getByRole("form", { name: "Connect a line" });
    await form.getByLabel("Password").fill("not-the-password");
    await form.getByRole("button", { name: "Test connection" }).click();
    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection failed: nothing was saved");
    await expect(result).toContainText("The password is wrong: check BlueBubbles Server → Settings → Password");
    // The provider's own words, on demand.
    await result.getByText("What BlueBubbles said").click();
    await expect(result).toContainText("Authentication Error");
    // The working connection is untouched.
    const row = page.getByRole("row").filter({ hasText: LINE_HANDLE }).first();
    await expect(row.getByTestId("line-health")).toHaveText("connected");
    await page.screenshot({ path: path.join(ARTIFACTS, "connect-line-failed.png"), fullPage: true });
    await result.getByRole("button", { name: "Save anyway" }).click();
    await expect(page.getByTestId("connection-result")).toContainText("Connection failed (saved as you asked)");
    await expect(page.getByTestId("connection-result").getByTestId("line-health")).toHaveText("degraded");
    await expect(row.getByTestId("line-health")).toHaveText("degraded");
  });

  test("switches the line back to simulated", async () => {
    const form = page.getByRole("form", { name: "Connect a line" });
    await form.getByLabel("Provider").selectOption("simulated");
    await expect(form.getByLabel("Password")).toHaveCount(0);
    await form.getByRole("button", { name: "Switch to simulated", exact: true }).click();
    await form.getByRole("alertdialog", { name: "Confirm the switch" }).getByRole("button", { name: "Switch to Simulated", exact: true }).click();
    const result = page.getByTestId("connection-result");
    await expect(result).toContainText("Connection OK");
    await expect(result.getByTestId("line-health")).toHaveText("connected");
    const row = page.getByRole("row").filter({ hasText: LINE_HANDLE }).first();
    await expect(row).toContainText("Simulated");
    await expect(row).not.toContainText(bbUrl);
  });

  test("adds a BlueBubbles line: the test fails and saves nothing, passes, and the line is added with the Mac's Apple ID", async () => {
    // A second Mac, signed in with its own Apple ID (the first one's is the connected line's now).
    second = await startFakeBlueBubbles({ password: BB_PASSWORD, appleId: "second-mac@icloud.com", deliver: async () => undefined });
    const form = page.getByRole("form", { name: "Add a line" });
    await form.getByRole("radio", { name: /BlueBubbles/ }).check();
    await form.getByLabel("Server URL").fill(second.url);
    await form.getByLabel("Password").fill("still-not-the-password");
    await form.getByLabel(/^Label/).fill("Mac mini");
    const rows = page.getByRole("row").filter({ hasText: "second-mac@icloud.com" });
    await form.getByRole("button", { name: "Test and add" }).click();
    const result = form.getByTestId("connection-result");
    await expect(result).toContainText("Connection failed: nothing was saved");
    await expect(result).toContainText("The password is wrong");
    await expect(rows).toHaveCount(0);
    await form.getByLabel("Password").fill(BB_PASSWORD);
    await form.getByRole("button", { name: "Test and add" }).click();
    await expect(result).toContainText("Connection OK");
    await expect(form.getByRole("status").filter({ hasText: "Added second-mac@icloud.com" })).toBeVisible();
    await expect(rows).toHaveCount(1);
    await expect(rows.first().getByLabel("Label")).toHaveValue("Mac mini");
    await expect(rows.first()).toContainText("BlueBubbles");
    await expect(rows.first().getByTestId("line-health")).toHaveText("connected");
    expect(await page.content()).not.toContain(BB_PASSWORD);
    await page.screenshot({ path: path.join(ARTIFACTS, "add-line.png"), fullPage: true });
  });
});
