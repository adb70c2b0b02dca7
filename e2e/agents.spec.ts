import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { findingsOn, settled } from "./audit";
import type { TestServer } from "./harness";
import { apiCall, signedInOwner } from "./sign-in";

// Keys handed to AI agents, as an owner uses them in Debian's Chromium against `npm start`:
// guardrails set when a key is created and changed later (a key that can approve is refused
// with the server's sentence); the agent's sends wait in Approvals with their context, one is
// approved (it is sent) and one rejected (it fails), a new one arrives live, and one is
// rejected from its conversation; a chat is paused (the agent is refused, the banner names
// the owner) and resumed. Then these pages at 1280 and 390 px, light and dark: no sideways
// scroll, no serious or critical axe finding, and a screenshot in e2e/artifacts/pages/ (and
// SHOTS_DIR when set).

const ARTIFACTS = path.resolve("e2e/artifacts/pages");
const SHOTS = process.env.SHOTS_DIR ? path.resolve(process.env.SHOTS_DIR) : null;
const email = `agents-${Date.now()}@example.com`;
const password = "a long enough password";
const LINE = "+15550003777";
const ALICE = "+15551113001";
const BOB = "+15551113002";
/** Has texted the line, but the agent's key does not list her. */
const CAROL = "+15551113003";

let app: TestServer;
let page: Page;
let key = "";
let agent = "";
let aliceChat = "";

/** A /v1 call with this spec's owner key (e2e/sign-in.ts). */
const api = (method: string, route: string, body?: unknown) => apiCall(app.base, key, method, route, body);
/** A /v1 call with the agent's key, answered as it is (refusals included). */
async function asAgent(method: string, route: string, body?: unknown) {
  const res = await fetch(`${app.base}${route}`, { method, headers: { authorization: `Bearer ${agent}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const outboxItem = async (id: string) => api("GET", `/v1/outbox?id=${id}`);

async function shot(name: string) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  ({ app, page, key } = await signedInOwner(browser, { email, password, lines: [["--handle", LINE, "--label", "Support"]], keyName: "owner" }));
  for (const [from, text] of [
    [ALICE, "Hi! Did my order ship yet?"],
    [ALICE, "It was order 4417, the blue lamp."],
    [BOB, "Do you have the lamp in green?"],
    [CAROL, "Are you open on Sunday?"],
  ]) {
    await api("POST", "/api/simulator/messages", { line: LINE, from, text });
  }
  aliceChat = (await api("GET", `/v1/chats?from=${encodeURIComponent(LINE)}&limit=10`)).data.find((c: { identifier: string }) => c.identifier === ALICE).id;
});

test.afterAll(async () => {
  await page?.context().close();
  await app?.dispose();
});

test("sets guardrails when creating a key, leaves out outbox:approve, and changes them later", async () => {
  await page.goto("/dashboard/keys");
  const form = page.getByRole("form", { name: "Create an API key" });
  await form.getByLabel("Name").fill("support-agent");
  await form.getByRole("button", { name: "Full access" }).click();
  const approveScope = form.getByRole("checkbox", { name: "outbox:approve" });
  await expect(approveScope).toBeChecked();
  await form.getByLabel("Only send to").fill(`${ALICE}\n${BOB}\n`);
  // Any guardrail leaves out the scope that approves, and says why.
  await expect(approveScope).not.toBeChecked();
  await expect(approveScope).toBeDisabled();
  await expect(form.getByText("A key with guardrails cannot hold outbox:approve")).toBeVisible();
  await expect(form.getByText("2 listed.")).toBeVisible();
  await form.getByRole("checkbox", { name: "Require approval of each send" }).check();
  await form.getByLabel("Sends per day").fill("50");
  await shot("keys-guardrails-form-1280");
  await form.getByRole("button", { name: "Create key" }).click();
  agent = (await page.getByTestId("secret").textContent())!.trim();
  expect(agent).toMatch(/^sk_live_/);
  await page.getByRole("button", { name: "Done" }).click();

  const row = page.getByRole("row").filter({ hasText: "support-agent" });
  await expect(row.getByTestId("guardrails-summary")).toHaveText(/Approval required.*Only 2 recipients.*50 a day/);
  await expect(row).toContainText("all but outbox:approve");

  // Changed later: a per-chat limit, and no daily one.
  await row.getByRole("button", { name: "Change guardrails" }).click();
  const dialog = page.getByRole("dialog", { name: "Guardrails of “support-agent”" });
  await expect(dialog.getByLabel("Only send to")).toHaveValue(`${ALICE}\n${BOB}`);
  await expect(dialog.getByRole("checkbox", { name: "Require approval of each send" })).toBeChecked();
  await dialog.getByLabel("Sends per chat without a reply").fill("3");
  await dialog.getByLabel("Sends per day").fill("");
  await dialog.getByRole("button", { name: "Save guardrails" }).click();
  await expect(dialog).toBeHidden();
  await expect(row.getByTestId("guardrails-summary")).toHaveText(/Approval required.*Only 2 recipients.*3 per chat without a reply/);
  await page.reload();
  await expect(page.getByRole("row").filter({ hasText: "support-agent" }).getByTestId("guardrails-summary")).not.toContainText("a day");

  // The owner's key holds outbox:approve: the server refuses guardrails on it, and the dialog says why.
  const owner = page.getByRole("row").filter({ hasText: "owner" });
  await expect(owner.getByTestId("guardrails-summary")).toHaveCount(0);
  await owner.getByRole("button", { name: "Add guardrails" }).click();
  const ownerDialog = page.getByRole("dialog", { name: "Guardrails of “owner”" });
  await ownerDialog.getByLabel("Sends per day").fill("10");
  await ownerDialog.getByRole("button", { name: "Save guardrails" }).click();
  await expect(ownerDialog.getByRole("alert")).toContainText("A key with guardrails cannot hold the 'outbox:approve' scope");
  await page.keyboard.press("Escape");
  await expect(ownerDialog).toBeHidden();

  // The agent's key works with its guardrails: someone it does not list is refused.
  expect((await asAgent("POST", "/v1/messages", { from: LINE, to: CAROL, text: "Yes, from ten." })).body.error.code).toBe("recipient_not_allowed");
});

test("the agent's sends wait in Approvals with their context; one approved is sent, one rejected fails, a new one arrives live", async () => {
  const upload = await fetch(`${app.base}/v1/files`, {
    method: "POST",
    headers: { authorization: `Bearer ${agent}`, "content-type": "image/png", "x-filename": "tracking-label.png" },
    // A real image, so the conversation's screenshots show it: a corner of the dashboard.
    body: new Uint8Array(await page.screenshot({ clip: { x: 0, y: 0, width: 240, height: 120 } })),
  });
  const fileId = ((await upload.json()) as { id: string }).id;
  const shipped = await asAgent("POST", "/v1/messages", { from: LINE, to: ALICE, text: "Good news: order 4417 shipped today. Here is the label.", attachments: [fileId] });
  expect(shipped.status).toBe(200);
  const offer = await asAgent("POST", "/v1/messages", { from: LINE, to: BOB, text: "Not in green, sorry. Want 20% off the blue one instead?" });

  await page.goto("/dashboard/approvals");
  await expect(page.getByRole("status", { name: "Live updates: live" })).toBeVisible();
  await expect(page.getByTestId("approvals-count")).toHaveText("2");
  const cards = page.getByTestId("approval");
  await expect(cards).toHaveCount(2);
  const first = cards.filter({ hasText: "order 4417 shipped" });
  await expect(first.getByRole("heading", { name: `To ${ALICE}` })).toBeVisible();
  await expect(first.getByTestId("proposal")).toContainText("tracking-label.png");
  await expect(first).toContainText("support-agent");
  await expect(first).toContainText(`Support (${LINE})`);
  await expect(first.getByRole("region", { name: `Recent messages with ${ALICE}` })).toContainText("It was order 4417, the blue lamp.");
  await shot("approvals-1280");

  await first.getByRole("button", { name: /^Approve/ }).click();
  await expect(cards).toHaveCount(1);
  const reviewed = page.getByTestId("reviewed");
  await expect(reviewed.filter({ hasText: "Approved" }).locator(".badge")).toHaveText("sent");
  expect((await outboxItem(shipped.body.id)).status).toBe("sent");

  await cards.getByRole("button", { name: /^Reject/ }).click();
  await expect(page.getByTestId("approvals-empty")).toContainText("Nothing waits for your approval.");
  await expect(reviewed.filter({ hasText: "Rejected" }).locator(".badge")).toHaveText("rejected");
  expect(await outboxItem(offer.body.id)).toMatchObject({ status: "failed", error: "rejected" });
  await expect(page.getByTestId("approvals-count")).toHaveCount(0);
  await shot("approvals-reviewed-1280");

  // A new send arrives without a reload, and the nav counts it.
  await page.waitForTimeout(500);
  await asAgent("POST", "/v1/messages", { from: LINE, to: ALICE, text: "Anything else I can help with?" });
  await expect(cards.filter({ hasText: "Anything else I can help with?" })).toBeVisible();
  await expect(page.getByTestId("approvals-count")).toHaveText("1");
});

test("a send waiting for approval shows in its conversation and is rejected there", async () => {
  await page.goto(`/dashboard/chats/${aliceChat}`);
  const held = page.getByTestId("unsent").filter({ hasText: "Anything else I can help with?" });
  await expect(held).toContainText("Waiting for your approval");
  await expect(held).toContainText("asked by the key “support-agent”");
  await shot("conversation-approval-1280");
  await held.getByRole("button", { name: /^Reject/ }).click();
  await expect(held).toContainText("Rejected");
  await expect(held.getByRole("button", { name: /^Approve/ })).toHaveCount(0);
  // The approved send is in the conversation as sent.
  await expect(page.getByTestId("message").filter({ hasText: "order 4417 shipped" })).toBeVisible();
});

test("pausing a chat refuses the agent and names who paused it; resuming lets it back", async () => {
  await page.goto(`/dashboard/chats/${aliceChat}`);
  await page.getByRole("button", { name: "Pause automated sending" }).click();
  const banner = page.getByTestId("paused-banner");
  await expect(banner).toContainText("Automated sending is paused");
  await expect(banner).toContainText(`Paused by ${email}`);
  await expect(page.getByRole("button", { name: "Pause automated sending" })).toHaveCount(0);
  const refused = await asAgent("POST", "/v1/messages", { from: LINE, to: ALICE, text: "Still there?" });
  expect(refused.status).toBe(409);
  expect(refused.body.error.code).toBe("chat_paused");
  expect((await api("GET", `/v1/chats?from=${encodeURIComponent(LINE)}&limit=10`)).data.find((c: { id: string }) => c.id === aliceChat).paused_at).toEqual(expect.any(Number));
  // The owner still replies from the page.
  await page.getByLabel("Message", { exact: true }).fill("Hi, this is Sam from the shop: I'll take it from here.");
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await expect(page.getByTestId("message").filter({ hasText: "I'll take it from here." })).toBeVisible();
  await page.reload();
  await expect(banner).toContainText(`Paused by ${email}`);
  await shot("conversation-paused-1280");

  await banner.getByRole("button", { name: "Resume" }).click();
  await expect(banner).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Pause automated sending" })).toBeVisible();
  expect((await asAgent("POST", "/v1/messages", { from: LINE, to: ALICE, text: "Back to you, Sam." })).status).toBe(200);
});

for (const width of [1280, 390]) {
  test(`the agents' pages fit ${width} px with no serious or critical accessibility finding`, async () => {
    test.setTimeout(240_000);
    // Something on each page: a send waiting for approval (Alice's, from the last test) and a paused chat.
    await api("POST", `/v1/chats/pause?id=${aliceChat}`);
    await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
    const pages: [name: string, route: string][] = [
      ["approvals", "/dashboard/approvals"],
      ["keys", "/dashboard/keys"],
      ["conversation-paused", `/dashboard/chats/${aliceChat}`],
      ["outbox", "/dashboard/outbox"],
    ];
    const findings: string[] = [];
    const check = async (what: string) => findings.push(...(await findingsOn(page, `${what} @${width}`)));
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const suffix = `${scheme === "dark" ? "-dark" : ""}-${width}`;
      for (const [name, route] of pages) {
        await page.goto(route);
        await settled(page);
        await shot(`agents-${name}${suffix}`);
        await check(`${route} ${scheme}`);
      }
      // The guardrails dialog, and the create form with a guardrail set.
      await page.goto("/dashboard/keys");
      await page.getByLabel("Only send to").fill(ALICE);
      await shot(`agents-keys-form-guarded${suffix}`);
      await page.getByRole("row").filter({ hasText: "support-agent" }).getByRole("button", { name: "Change guardrails" }).click();
      await expect(page.getByRole("dialog")).toBeVisible();
      await page.screenshot({ path: path.join(ARTIFACTS, `agents-keys-dialog${suffix}.png`) });
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `agents-keys-dialog${suffix}.png`) });
      await check(`guardrails dialog ${scheme}`);
      await page.keyboard.press("Escape");
      // The phone menu with the count.
      if (width === 390 && scheme === "light") {
        await page.getByRole("button", { name: "Menu" }).click();
        await expect(page.getByTestId("approvals-count")).toBeVisible();
        await page.screenshot({ path: path.join(ARTIFACTS, `agents-menu-${width}.png`) });
        if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `agents-menu-${width}.png`) });
        await page.getByRole("button", { name: "Close" }).click();
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.goto("/dashboard/approvals");
    await settled(page);
    expect(findings).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 860 });
  });
}
