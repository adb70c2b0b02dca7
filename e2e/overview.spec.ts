import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { type Browser, expect, type Page, test } from "@playwright/test";
import { freePort, type TestServer, testServer } from "./harness";
import { apiCall, signIn } from "./sign-in";

// The overview page in Chromium against `next start`: a new owner sees the setup steps and
// charts that say they have nothing yet; after a day of traffic through the simulator and /v1
// (messages both ways, a send that fails, a webhook that answers 200 and one that answers 500,
// a BlueBubbles line whose Mac does not answer) the charts draw it, "Needs attention" names the
// degraded line and the failing webhook, and the page fits 1280 px and a 390 px phone, in light
// and dark, as does the Lines page with those lines. Screenshots:
// e2e/artifacts/overview-{1280,390}[-dark].png, overview-empty.png, overview-lines-{1280,390}.png.

const ARTIFACTS = path.resolve("e2e/artifacts");
const email = `overview-${Date.now()}@example.com`;
const password = "a long enough password";
const LINE = "+15550100077";
const UNREACHABLE = "+15005550001"; // the simulated platform fails every send to it
// Longer than the health chart's name axis at any width: it is shortened there, never clipped.
const MAC_LABEL = "Mac mini in the back office";

let app: TestServer;
let page: Page;
let key = "";
let failingHook = "";
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(req.url === "/broken" ? 500 : 200).end("ok"));
});

/** A /v1 call with this spec's key (e2e/sign-in.ts: retried over a kept-alive connection the server just closed). */
const v1 = (method: string, route: string, body?: unknown) => apiCall(app.base, key, method, route, body);

const text = (from: string, t: string) => v1("POST", "/api/simulator/messages", { line: LINE, from, text: t });

async function noHorizontalScroll() {
  const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  expect(scroll).toBeLessThanOrEqual(inner);
}

/**
 * The line health chart's labels: each line's name is one line of text between the chart's
 * left edge and the first day (shortened with "…" when long, the whole name in its title), and
 * the dates under the days neither overlap nor leave the chart.
 */
async function healthLabelsFit() {
  const { names, dates } = await page.getByTestId("chart-health").evaluate((figure) => {
    const svg = figure.querySelector("svg.recharts-surface")!.getBoundingClientRect();
    const firstDay = Math.min(...[...figure.querySelectorAll(".recharts-bar-rectangle path")].map((p) => p.getBoundingClientRect().left));
    const box = (el: Element) => el.getBoundingClientRect();
    return {
      names: [...figure.querySelectorAll(".recharts-yAxis-tick-labels text")].map((t) => ({
        title: t.querySelector("title")?.textContent ?? "",
        shown: t.lastChild?.textContent ?? "",
        left: box(t).left - svg.left,
        gap: firstDay - box(t).right,
        lines: t.querySelectorAll("tspan").length,
      })),
      dates: [...figure.querySelectorAll(".recharts-xAxis-tick-labels text")].map((t) => ({ left: box(t).left - svg.left, right: box(t).right - svg.left, width: svg.width })),
    };
  });
  expect(names.map((n) => n.title).sort()).toEqual([MAC_LABEL, "Support"]);
  for (const n of names) {
    expect(n.left, n.shown).toBeGreaterThanOrEqual(0);
    expect(n.gap, n.shown).toBeGreaterThanOrEqual(0);
    expect(n.lines, n.shown).toBeLessThanOrEqual(1);
    expect(n.shown === n.title || (n.shown.endsWith("…") && n.title.startsWith(n.shown.slice(0, -1))), n.shown).toBe(true);
  }
  expect(dates.length).toBeGreaterThan(1);
  for (const [i, d] of dates.entries()) {
    expect(d.left).toBeGreaterThanOrEqual(0);
    expect(d.right).toBeLessThanOrEqual(d.width);
    if (i > 0) expect(d.left).toBeGreaterThanOrEqual(dates[i - 1]!.right);
  }
}

/** The Lines table shows every column: no row's buttons are cut off by the table's scroll box or the window. */
async function linesTableFits() {
  await page.goto("/dashboard/lines");
  const deactivate = page.getByRole("button", { name: "Deactivate" });
  await expect(deactivate).toHaveCount(2);
  const wrap = await page.locator(".table-wrap", { has: deactivate.first() }).evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right }));
  expect(wrap.scroll).toBeLessThanOrEqual(wrap.client);
  const inner = await page.evaluate(() => window.innerWidth);
  for (const button of await deactivate.all()) {
    const box = (await button.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(Math.min(wrap.right, inner));
  }
  await noHorizontalScroll();
}

const shot = (name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }: { browser: Browser }) => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // Line probes once an hour: the BlueBubbles line's health changes only when this test says so.
  app = await testServer({ WEBHOOK_ALLOW_INSECURE: "true", PROVIDER_ALLOW_PRIVATE: "true", PROVIDER_PROBE_SECONDS: "3600" });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  page = await browser.newPage({ baseURL: app.base });
});

test.afterAll(async () => {
  await page?.close();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await app?.dispose();
});

test.describe("the overview in Chromium", () => {
  test("a new owner sees the setup steps and charts that say, in words, there is nothing yet", async () => {
    app.admin("account", "create", "--email", email, "--password", password);
    await signIn(page, email, password);
    const steps = page.getByTestId("get-started");
    await expect(steps).toContainText("0 of 4 done");
    await expect(steps.getByRole("link", { name: "simulator" })).toBeVisible();
    await expect(page.getByTestId("chart-messages")).toContainText("No messages were sent or received in the last 14 days");
    await expect(page.getByTestId("chart-delivery")).toContainText("No message sends finished in the last 14 days");
    await expect(page.getByTestId("chart-webhooks")).toContainText("No webhooks yet");
    await expect(page.getByTestId("chart-health")).toContainText("No lines yet");
    await expect(page.getByTestId("needs-attention")).toHaveCount(0);
    await expect(page.locator(".recharts-surface")).toHaveCount(0);
    await shot("overview-empty");
  });

  test("after traffic, draws the charts, names what needs attention and drops the finished setup list", async () => {
    key = app.admin("key", "create", "--account", email, "--name", "overview");
    app.admin("line", "create", "--account", email, "--handle", LINE, "--label", "Support");
    // A BlueBubbles line whose Mac is not there (nothing listens on the port): its probe fails.
    const closed = await freePort();
    app.admin(
      "line", "create", "--account", email, "--handle", "mac-e2e@example.com", "--label", MAC_LABEL,
      "--provider", "bluebubbles", "--provider-config", JSON.stringify({ url: `http://127.0.0.1:${closed}`, password: "not-listening" }),
    );
    const port = (receiver.address() as AddressInfo).port;
    await v1("POST", "/v1/webhooks", { from: LINE, url: `http://127.0.0.1:${port}/ok`, events: ["message.received", "message.sent"] });
    failingHook = (await v1("POST", "/v1/webhooks", { from: LINE, url: `http://127.0.0.1:${port}/broken`, events: ["message.received"] })).id;
    const contacts = ["+15551230101", "+15551230102", "+15551230103"];
    for (const c of contacts) {
      await text(c, `hello from ${c}`);
      await text(c, "are you there?");
    }
    await text(UNREACHABLE, "text me back");
    for (const c of contacts) await v1("POST", "/v1/messages", { from: LINE, to: c, text: "yes, here" });
    const failed = await v1("POST", "/v1/messages", { from: LINE, to: UNREACHABLE, text: "this one fails" });
    await expect.poll(async () => (await v1("GET", `/v1/outbox?id=${failed.id}`)).status, { timeout: 30_000 }).toBe("failed");

    await page.reload();
    await expect(page.getByTestId("get-started")).toHaveCount(0);
    for (const id of ["chart-messages", "chart-delivery", "chart-webhooks", "chart-health"]) {
      await expect(page.getByTestId(id).locator(".recharts-surface")).toHaveCount(1);
    }
    const messages = page.getByTestId("chart-messages");
    await expect(messages.locator(".recharts-bar-rectangle path").first()).toBeVisible();
    await expect(messages).toContainText("Sent");
    await expect(messages).toContainText("Received");
    await expect(messages).toContainText("3 sent and 7 received in 14 days");
    const delivery = page.getByTestId("chart-delivery");
    await expect(delivery).toContainText("3 of 4 messages whose send finished in 14 days went out (75%)");
    await expect(delivery.locator(".recharts-bar-rectangle path").first()).toBeVisible();
    await expect(delivery.locator(".recharts-line-curve, .recharts-line-dots circle").first()).toBeAttached();
    const hooks = page.getByTestId("chart-webhooks");
    await expect(hooks.locator(".recharts-bar-rectangle path").first()).toBeVisible();
    await expect(hooks).toContainText("Success rate");
    const health = page.getByTestId("chart-health");
    await expect(health.locator(".recharts-bar-rectangle path").first()).toBeVisible();
    await expect(health).toContainText(`${MAC_LABEL} (mac-e2e@example.com) (1 day)`);
    // The numbers are there for screen readers too.
    await expect(health.locator("table caption")).toHaveText("Line health per day (worst status of the day)");

    const attention = page.getByTestId("needs-attention");
    await expect(attention).toContainText("Mac mini");
    await expect(attention).toContainText(/degraded|disconnected/);
    await expect(attention.getByRole("link", { name: "Check it on the Lines page" })).toHaveAttribute("href", "/dashboard/lines");
    await expect(attention).toContainText(`http://127.0.0.1:${port}/broken`);
    await expect(attention.getByRole("link", { name: "See its deliveries" })).toHaveAttribute("href", `/dashboard/webhooks/${failingHook}`);
  });

  test("fits 1280 px and a 390 px phone without horizontal scrolling, in light and dark", async () => {
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
        await page.reload();
        await expect(page.getByTestId("chart-health").locator(".recharts-bar-rectangle path").first()).toBeVisible();
        await expect(page.getByTestId("chart-messages").locator(".recharts-bar-rectangle path").first()).toBeVisible();
        await noHorizontalScroll();
        await healthLabelsFit();
        // The bars take their colour from the page's variables, which follow the colour scheme.
        const fill = await page.getByTestId("chart-messages").locator(".recharts-bar-rectangle path").first().evaluate((el) => getComputedStyle(el).fill);
        expect(fill).toBe(scheme === "dark" ? "rgb(139, 133, 255)" : "rgb(79, 70, 229)");
        await shot(`overview-${width}${scheme === "dark" ? "-dark" : ""}`);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
  });

  test("the Lines page shows each line's buttons whole at 1280 px and on a 390 px phone", async () => {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
      await linesTableFits();
      await shot(`overview-lines-${width}`);
    }
  });
});
