import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { findingsOn, settled } from "./audit";
import type { TestServer } from "./harness";
import { apiCall, signedInOwner } from "./sign-in";

// The inbox as an owner uses it, in Debian's Chromium against `npm start`: a message texted to
// a line arrives live (no reload); message search; a failed send that is still there after a
// reload, with its reason and a Retry; the outbox's filters; the API reference. Then every
// dashboard page at 1280 and 390 px: no sideways scroll, no serious or critical axe finding,
// and a screenshot of each in e2e/artifacts/pages/.

const ARTIFACTS = path.resolve("e2e/artifacts/pages");
const email = `inbox-${Date.now()}@example.com`;
const password = "a long enough password";
const LINE = "+15550001777";
/** The simulated platform fails every send to this number for good. */
const UNREACHABLE = "+15005550001";

let app: TestServer;
let page: Page;
let key = "";

/** A /v1 call with this spec's key (e2e/sign-in.ts). */
const api = (method: string, route: string, body?: unknown) => apiCall(app.base, key, method, route, body);
const text = (from: string, message: string) => api("POST", "/api/simulator/messages", { line: LINE, from, text: message });

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ app, page, key } = await signedInOwner(browser, { email, password, lines: [["--handle", LINE, "--advanced"]] }));
});

test.afterAll(async () => {
  await page?.context().close();
  await app?.dispose();
});

test("a message texted to a line appears in the inbox and in the open conversation live, without a reload", async () => {
  await page.goto("/dashboard/chats");
  await expect(page.getByRole("status", { name: "Live updates: live" })).toBeVisible();
  await text("+15551110001", "Is the shop open on Sunday?");
  const row = page.getByRole("list", { name: "Conversations" }).getByRole("link", { name: /\+15551110001/ });
  await expect(row).toContainText("Is the shop open on Sunday?");
  await expect(row.getByLabel("1 unread")).toBeVisible();
  await row.click();
  const conversation = page.getByTestId("conversation");
  await expect(conversation).toContainText("Is the shop open on Sunday?");
  await page.waitForTimeout(500);
  const second = await text("+15551110001", "And what time do you close?");
  await expect(conversation.getByTestId("message").filter({ hasText: "And what time do you close?" })).toBeVisible();
  // Typing and reactions arrive live too.
  await api("POST", "/api/simulator/typing", { line: LINE, from: "+15551110001", is_typing: true });
  await expect(conversation.getByTestId("typing")).toBeVisible();
  await api("POST", "/api/simulator/typing", { line: LINE, from: "+15551110001", is_typing: false });
  await expect(conversation.getByTestId("typing")).toHaveCount(0);
  await api("POST", "/api/simulator/reactions", { line: LINE, from: "+15551110001", message_id: second.id, type: "love", added: true });
  await expect(conversation.getByTestId("message").filter({ hasText: "And what time do you close?" }).getByLabel("Reactions")).toContainText("❤️");
  // Opened: nothing is unread any more.
  await page.goto("/dashboard/chats");
  await expect(page.getByRole("link", { name: /\+15551110001/ }).getByLabel(/unread/)).toHaveCount(0);
});

test("searches the text of messages", async () => {
  await text("+15551110002", "My parcel tracking number is ZX81");
  await page.goto("/dashboard/chats");
  await page.getByRole("radio", { name: "Messages" }).check();
  await page.getByLabel("Search").fill("parcel");
  const found = page.getByRole("list", { name: "Messages found" });
  await expect(found).toContainText("My parcel tracking number is ZX81");
  await expect(found.getByRole("link")).toHaveCount(1);
  await found.getByRole("link").click();
  await expect(page.getByTestId("conversation")).toContainText("My parcel tracking number is ZX81");
});

test("a failed send stays in its conversation after a reload, with its reason, and Retry sends it again", async () => {
  await text(UNREACHABLE, "Please text me back");
  await page.goto("/dashboard/chats");
  await page.getByRole("link", { name: new RegExp(`\\${UNREACHABLE}`) }).click();
  await page.getByLabel("Message", { exact: true }).fill("This one will not arrive");
  await page.getByRole("button", { name: "Send", exact: true }).click();
  const failed = page.getByTestId("unsent").filter({ hasText: "This one will not arrive" });
  await expect(failed).toContainText("Not sent");
  await expect(failed).toContainText("recipient is not reachable");
  await page.reload();
  await expect(failed).toContainText("Not sent");
  await page.screenshot({ path: path.join(ARTIFACTS, "conversation-failed-1280.png"), fullPage: true });
  await failed.getByRole("button", { name: "Retry" }).click();
  // The retry fails too (the number is unreachable): one failed bubble, the new one.
  await expect.poll(async () => (await api("GET", "/v1/outbox?status=failed")).data.length).toBe(2);
  await page.reload();
  await expect(page.getByTestId("unsent")).toHaveCount(1);
  await expect(page.getByTestId("unsent")).toContainText("Not sent");
});

test("the outbox shows recipient, line, text and chat, filtered by status and line", async () => {
  await text("+15551110003", "hello");
  await api("POST", "/v1/messages", { from: LINE, to: "+15551110003", text: "A reply that is sent" });
  await page.goto("/dashboard/outbox");
  const items = page.getByTestId("outbox-item");
  await expect(items.filter({ hasText: "A reply that is sent" })).toContainText("+15551110003");
  await page.getByLabel("Status").selectOption("failed");
  await expect(page).toHaveURL(/status=failed/);
  await expect(items).toHaveCount(2);
  for (const row of await items.all()) await expect(row).toContainText("failed");
  await page.getByLabel("Line").selectOption(LINE);
  await expect(page).toHaveURL(/line=/);
  await expect(items).toHaveCount(2);
  await page.getByLabel("Status").selectOption("sent");
  await expect(items.filter({ hasText: "A reply that is sent" })).toBeVisible();
  await items.filter({ hasText: "A reply that is sent" }).getByRole("link", { name: "Open chat" }).click();
  await expect(page.getByTestId("conversation")).toContainText("A reply that is sent");
});

test("the API reference renders the OpenAPI document's Markdown, tables included, with a console that takes an API key", async () => {
  await page.goto("/docs");
  await expect(page.getByRole("heading", { name: "Relay API", exact: true })).toBeVisible();
  await expect(page.getByRole("heading", { name: "Provider errors and delivery status" })).toBeVisible();
  // The Twilio error-code table is a table, not a paragraph of pipes.
  await expect(page.getByRole("table").filter({ hasText: "21610" }).first()).toBeVisible();
  await expect(page.getByText("| 21610")).toHaveCount(0);
  // The try-it client's own copy of the field waits, hidden, until it opens.
  await expect(page.getByText("Bearer Token").filter({ visible: true })).toBeVisible();
});

test("works from the keyboard: a skip link first, then the navigation; the phone menu opens with Enter", async () => {
  await page.goto("/dashboard/outbox");
  await page.keyboard.press("Tab");
  await expect(page.getByRole("link", { name: "Skip to content" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/#main$/);
  await page.goto("/dashboard/outbox");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  await expect(page.getByRole("link", { name: "Relay" })).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Overview" })).toBeFocused();
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { level: 1, name: "Inbox" })).toBeVisible();

  await page.setViewportSize({ width: 390, height: 844 });
  const menu = page.getByRole("button", { name: "Menu" });
  await menu.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("button", { name: "Close" })).toHaveAttribute("aria-expanded", "true");
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Outbox" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Outbox" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Dashboard" })).toBeHidden();
  await page.setViewportSize({ width: 1280, height: 860 });
});

const PAGES = ["/dashboard", "/dashboard/chats", "/dashboard/lines", "/dashboard/pools", "/dashboard/outbox", "/dashboard/approvals", "/dashboard/webhooks", "/dashboard/keys", "/dashboard/sandbox", "/dashboard/simulator", "/docs"];

/** The pages of one chat, one line and one webhook, made once. */
let detailPages: string[] | null = null;
async function details(): Promise<string[]> {
  if (detailPages) return detailPages;
  const chat = (await api("GET", `/v1/chats?from=${encodeURIComponent(LINE)}&limit=1`)).data[0];
  const line = (await api("GET", "/v1/lines")).data.find((l: { handle: string }) => l.handle === LINE);
  const hook = await api("POST", "/v1/webhooks", { from: LINE, url: "https://example.com/relay-hook", events: ["message.received"] });
  detailPages = [`/dashboard/chats/${chat.id}`, `/dashboard/lines/${line.id}`, `/dashboard/webhooks/${hook.id}`];
  return detailPages;
}

for (const width of [1280, 390]) {
  test(`every page fits ${width} px with no serious or critical accessibility finding`, async () => {
    test.setTimeout(300_000);
    await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
    const findings: string[] = [];
    for (const route of [...PAGES, ...(await details())]) {
      await page.goto(route);
      await settled(page);
      const name = route.replace(/(cht|ln|wh)_\w+/, "$1").replace(/\W+/g, "-").replace(/^-|-$/g, "");
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
      const found = await findingsOn(page, `${route} @${width}`);
      // The reference is Scalar's own markup: its accessibility findings are theirs to fix, but it must still fit.
      findings.push(...(route === "/docs" ? found.filter((f) => f.includes("scrolls sideways")) : found));
    }
    expect(findings).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 860 });
  });
}
