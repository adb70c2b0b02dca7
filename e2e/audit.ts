import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";

// What the specs' page sweeps check on every page they visit: that it has finished loading,
// that it does not scroll sideways, and that axe finds nothing serious or critical.

/**
 * Waits until the page shows its data: no list still loading (`aria-busy`, which the server
 * renders before the first query answers) and its fonts in. Live pages keep a stream open,
 * so network-idle never comes.
 */
export async function settled(page: Page): Promise<void> {
  await page.waitForLoadState("load");
  await expect(page.locator("[aria-busy=true]")).toHaveCount(0);
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
  // A frame or two for what the data's arrival re-laid out.
  await page.waitForTimeout(150);
}

/** Sideways scrolling and axe's serious or critical findings on the page as it is, one line each; `what` names the page. */
export async function findingsOn(page: Page, what: string): Promise<string[]> {
  const findings: string[] = [];
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 0) findings.push(`${what}: scrolls sideways by ${overflow} px`);
  const result = await new AxeBuilder({ page }).analyze();
  for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
    findings.push(`${what}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`);
  }
  return findings;
}
