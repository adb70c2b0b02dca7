import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { findingsOn, settled } from "./audit";
import type { TestServer } from "./harness";
import { apiCall, signedInOwner } from "./sign-in";

// Sending later, send policies and pools as an owner uses them, in Debian's Chromium against
// `npm start`: a reply scheduled from the composer shows in its conversation as "Scheduled for
// …" and in the outbox as Scheduled, is rescheduled (a past time refused in the page) and
// canceled; a line's send policy refuses a time zone that does not exist with the server's
// message next to the field, then saves a valid one that is still there after a reload, with
// the line's capacity; a pool is created, loses and regains a line, and another is deleted.
// Then each of these pages at 1280 and 390 px, light and dark: no sideways scroll, no serious or
// critical axe finding, and a screenshot in e2e/artifacts/pages/.

const ARTIFACTS = path.resolve("e2e/artifacts/pages");
const email = `policy-${Date.now()}@example.com`;
const password = "a long enough password";
const LINE = "+15550002888";
const SECOND = "+15550002889";
const CONTACT = "+15551112222";

let app: TestServer;
let page: Page;
let key = "";
let chatId = "";
let lineId = "";

/** A /v1 call with this spec's key (e2e/sign-in.ts). */
const api = (method: string, route: string, body?: unknown) => apiCall(app.base, key, method, route, body);

/** A `datetime-local` value `ms` from now, in the browser's zone. */
const localInput = (ms: number) =>
  page.evaluate((ahead) => {
    const d = new Date(Date.now() + ahead);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }, ms);

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ app, page, key } = await signedInOwner(browser, {
    email,
    password,
    lines: [
      ["--handle", LINE, "--label", "Support"],
      ["--handle", SECOND, "--label", "Sales"],
    ],
  }));
  await api("POST", "/api/simulator/messages", { line: LINE, from: CONTACT, text: "Can you call me tomorrow morning?" });
  chatId = (await api("GET", `/v1/chats?from=${encodeURIComponent(LINE)}&limit=1`)).data[0].id;
  lineId = (await api("GET", "/v1/lines")).data.find((l: { handle: string }) => l.handle === LINE).id;
});

test.afterAll(async () => {
  await page?.context().close();
  await app?.dispose();
});

test("a reply scheduled from the composer shows as scheduled in its conversation and the outbox, is rescheduled and canceled", async () => {
  await page.goto(`/dashboard/chats/${chatId}`);
  await expect(page.getByTestId("conversation")).toContainText("Can you call me tomorrow morning?");
  await page.getByLabel("Message", { exact: true }).fill("Calling you at nine!");
  await page.getByRole("checkbox", { name: "Send later" }).check();
  const sendAt = page.getByLabel("Send at");
  // A time that has passed is refused in the page, before anything is sent.
  await sendAt.fill(await localInput(-3_600_000));
  await page.getByRole("button", { name: "Schedule" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Choose a time in the future." })).toBeVisible();
  await sendAt.fill(await localInput(2 * 3_600_000));
  await page.getByRole("button", { name: "Schedule" }).click();
  const bubble = page.getByTestId("unsent").filter({ hasText: "Calling you at nine!" });
  await expect(bubble).toContainText("Scheduled for");
  await expect(bubble).toContainText(/in 2 hours|in 120 minutes|in 119 minutes/);
  await expect(bubble.getByRole("button", { name: /^Cancel/ })).toBeVisible();
  // Still there after a reload: it comes from the database.
  await page.reload();
  await expect(bubble).toContainText("Scheduled for");
  await page.screenshot({ path: path.join(ARTIFACTS, "conversation-scheduled-1280.png"), fullPage: true });

  await page.goto("/dashboard/outbox");
  const row = page.getByTestId("outbox-item").filter({ hasText: "Calling you at nine!" });
  await expect(row.getByTestId("hold-badge")).toHaveText(/Scheduled/);
  await expect(row).toContainText(/Sends in (2 hours|1[12]\d minutes)/);
  await page.getByLabel("Status").selectOption("held");
  await expect(page).toHaveURL(/status=held/);
  await expect(page.getByTestId("outbox-item")).toHaveCount(1);

  // Reschedule: a past time is refused in the dialog; three hours ahead moves it.
  await row.getByRole("button", { name: /^Reschedule/ }).click();
  const dialog = page.getByRole("dialog", { name: "Reschedule" });
  await expect(dialog).toBeVisible();
  await dialog.getByLabel("Send at").fill(await localInput(-60_000));
  await dialog.getByRole("button", { name: "Reschedule" }).click();
  await expect(dialog.getByRole("alert")).toHaveText("Choose a time in the future.");
  await dialog.getByLabel("Send at").fill(await localInput(3 * 3_600_000));
  await dialog.getByRole("button", { name: "Reschedule" }).click();
  await expect(dialog).toBeHidden();
  await expect(row).toContainText(/Sends in (3 hours|1[78]\d minutes)/);

  // Cancel asks first; "Keep it" keeps it.
  await row.getByRole("button", { name: /^Cancel/ }).click();
  const confirm = page.getByRole("dialog", { name: "Cancel this send?" });
  await expect(confirm).toBeVisible();
  await confirm.getByRole("button", { name: "Keep it" }).click();
  await expect(confirm).toBeHidden();
  await expect(row.getByTestId("hold-badge")).toBeVisible();
  await row.getByRole("button", { name: /^Cancel/ }).click();
  await confirm.getByRole("button", { name: "Cancel send" }).click();
  await expect(confirm).toBeHidden();
  // Canceled: no longer held, shown as canceled under "all".
  await expect(page.getByTestId("outbox-item")).toHaveCount(0);
  await page.getByLabel("Status").selectOption("");
  await expect(row).toContainText("canceled");
  await expect(row.getByRole("button", { name: /^Cancel/ })).toHaveCount(0);
  const item = (await api("GET", "/v1/outbox?limit=10")).data.find((o: { payload: { text?: string } }) => o.payload.text === "Calling you at nine!");
  expect(item).toMatchObject({ status: "failed", error: "canceled", hold_reason: null });
  // And it left the conversation.
  await page.goto(`/dashboard/chats/${chatId}`);
  await expect(page.getByTestId("conversation")).toContainText("Can you call me tomorrow morning?");
  await expect(page.getByTestId("unsent")).toHaveCount(0);
});

test("a line's send policy refuses a time zone that does not exist next to the field, saves a valid one and shows it after a reload", async () => {
  await page.goto("/dashboard/lines");
  await page.getByRole("link", { name: `Send policy and capacity of ${LINE}` }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText(LINE);
  await expect(page.getByRole("heading", { name: "Send policy" })).toBeVisible();
  await expect(page.getByTestId("capacity")).toBeVisible();
  const form = page.getByRole("form", { name: "Send policy" });

  await form.getByRole("checkbox", { name: "Contact first" }).uncheck();
  await form.getByLabel("New contacts per hour").fill("5");
  await form.getByLabel("New contacts per day").fill("");
  await form.getByRole("checkbox", { name: "Quiet hours" }).check();
  // The zone defaults to the browser's.
  const browserZone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  const zone = form.getByLabel("Time zone");
  await expect(zone).toHaveValue(browserZone);
  await form.getByLabel("Start", { exact: true }).fill("21:00");
  await form.getByLabel("End", { exact: true }).fill("08:00");
  await zone.fill("Mars/Olympus_Mons");
  await form.getByRole("button", { name: "Save policy" }).click();
  // The server's sentence, under the field it names, which is marked invalid.
  await expect(zone).toHaveAttribute("aria-invalid", "true");
  await expect(zone).toHaveAccessibleDescription(/must be an IANA time zone/i);
  await expect(form.getByRole("alert")).toHaveText(/^Must be an IANA time zone such as "America\/New_York"$/);
  await page.screenshot({ path: path.join(ARTIFACTS, "line-policy-refused-1280.png"), fullPage: true });

  await zone.fill("Europe/Berlin");
  await form.getByLabel("Sends per second").fill("2");
  await form.getByRole("button", { name: "Save policy" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Saved." })).toBeVisible();
  await expect(page.getByTestId("policy-summary")).toHaveText("May message first · 5 new contacts an hour · quiet 21:00–08:00 (Europe/Berlin) · 2 sends/s");
  await expect(page.getByTestId("capacity")).toContainText("0 of 5 used");

  await page.reload();
  await expect(form.getByLabel("Time zone")).toHaveValue("Europe/Berlin");
  await expect(form.getByLabel("New contacts per hour")).toHaveValue("5");
  await expect(form.getByLabel("New contacts per day")).toHaveValue("");
  await expect(form.getByRole("checkbox", { name: "Contact first" })).not.toBeChecked();
  await expect(form.getByLabel("Sends per second")).toHaveValue("2");
  const line = (await api("GET", "/v1/lines")).data.find((l: { handle: string }) => l.handle === LINE);
  expect(line.send_policy).toEqual({
    contact_first: false,
    new_contacts_per_hour: 5,
    new_contacts_per_day: null,
    quiet_hours: { start: "21:00", end: "08:00", timezone: "Europe/Berlin" },
    rate_per_second: 2,
  });
});

test("creates a pool with a line, removes and adds the line again, and deletes another pool after asking", async () => {
  await page.goto("/dashboard/pools");
  await expect(page.getByRole("heading", { level: 1, name: "Pools" })).toBeVisible();
  await expect(page.getByTestId("pools-empty")).toContainText("pool_");
  await page.screenshot({ path: path.join(ARTIFACTS, "pools-empty-1280.png"), fullPage: true });

  const create = page.getByRole("form", { name: "Create a pool" });
  await create.getByLabel("Name").fill("Outreach");
  await create.getByRole("checkbox", { name: new RegExp(`\\${LINE}`) }).check();
  await create.getByRole("checkbox", { name: new RegExp(`\\${SECOND}`) }).check();
  await create.getByRole("button", { name: "Create pool" }).click();
  const pool = page.getByTestId("pool").filter({ hasText: "Outreach" });
  await expect(pool).toContainText(/pool_\w+/);
  const lines = pool.getByRole("list", { name: "Lines of Outreach" });
  await expect(lines.getByRole("listitem")).toHaveCount(2);
  await expect(lines).toContainText(LINE);
  await expect(lines).toContainText("connected");

  await lines.getByRole("button", { name: `Remove ${SECOND} from Outreach` }).click();
  await expect(lines.getByRole("listitem")).toHaveCount(1);
  await pool.getByLabel("Line to add to Outreach").selectOption({ label: `Sales (${SECOND})` });
  await pool.getByRole("button", { name: "Add", exact: true }).click();
  await expect(lines.getByRole("listitem")).toHaveCount(2);

  // A second pool of the same name is refused, with the reason under the name.
  await create.getByLabel("Name").fill("Outreach");
  await create.getByRole("button", { name: "Create pool" }).click();
  await expect(create.getByRole("alert")).toContainText("exists already");
  await create.getByLabel("Name").fill("Temporary");
  await create.getByRole("button", { name: "Create pool" }).click();
  const temp = page.getByTestId("pool").filter({ hasText: "Temporary" });
  await expect(temp).toContainText("No lines");
  await temp.getByRole("button", { name: "Delete pool" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete Temporary?" });
  await confirm.getByRole("button", { name: "Delete pool" }).click();
  await expect(temp).toHaveCount(0);
  await expect(pool).toBeVisible();
  const listed = await api("GET", "/v1/pools");
  expect(listed.data.map((p: { name: string; line_ids: string[] }) => [p.name, p.line_ids.length])).toEqual([["Outreach", 2]]);
});

for (const width of [1280, 390]) {
  test(`the new and changed pages fit ${width} px with no serious or critical accessibility finding`, async () => {
    test.setTimeout(240_000);
    // Something held on each page: a scheduled reply (in the conversation and the outbox).
    await api("POST", "/v1/messages", { from: LINE, to: chatId, text: "See you on Monday", send_at: Date.now() + 26 * 3_600_000 });
    await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
    const pages: [name: string, route: string][] = [
      ["outbox", "/dashboard/outbox"],
      ["outbox-held", "/dashboard/outbox?status=held"],
      ["lines", "/dashboard/lines"],
      ["line-policy", `/dashboard/lines/${lineId}`],
      ["pools", "/dashboard/pools"],
      ["conversation-scheduled", `/dashboard/chats/${chatId}`],
    ];
    const findings: string[] = [];
    for (const [name, route] of pages) {
      await page.goto(route);
      await settled(page);
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
      findings.push(...(await findingsOn(page, `${route} @${width}`)));
    }
    // The composer with "Send later" open.
    await page.goto(`/dashboard/chats/${chatId}`);
    await expect(page.getByTestId("conversation")).toContainText("See you on Monday");
    await page.getByRole("checkbox", { name: "Send later" }).check();
    await expect(page.getByLabel("Send at")).toBeVisible();
    await page.screenshot({ path: path.join(ARTIFACTS, `composer-send-later-${width}.png`), fullPage: true });
    findings.push(...(await findingsOn(page, `composer @${width}`)));
    // The dialogs too: Reschedule open on the outbox.
    await page.goto("/dashboard/outbox?status=held");
    await page.getByTestId("outbox-item").first().getByRole("button", { name: /^Reschedule/ }).click();
    await expect(page.getByRole("dialog", { name: "Reschedule" })).toBeVisible();
    await page.screenshot({ path: path.join(ARTIFACTS, `outbox-reschedule-dialog-${width}.png`) });
    findings.push(...(await findingsOn(page, `reschedule dialog @${width}`)));
    await page.keyboard.press("Escape");
    await expect(page.getByRole("dialog", { name: "Reschedule" })).toBeHidden();
    // And in dark mode: the same pages' colours from the dark palette.
    await page.emulateMedia({ colorScheme: "dark" });
    for (const [name, route] of pages.filter(([n]) => ["outbox", "line-policy", "pools", "conversation-scheduled"].includes(n))) {
      await page.goto(route);
      await settled(page);
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}-dark-${width}.png`), fullPage: true });
      findings.push(...(await findingsOn(page, `${route} @${width} dark`)));
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(findings).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 860 });
  });
}
