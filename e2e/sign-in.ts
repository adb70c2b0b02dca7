import { type Browser, expect, type Page } from "@playwright/test";
import { type TestServer, testServer } from "./harness";

/** Signs in on /sign-in and waits for the overview's welcome. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto("/sign-in");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { level: 1, name: /^Welcome/ })).toBeVisible();
}

/**
 * A spec's owner: a server of its own (`npm start`), an account with `password`, a line made
 * by `line create` from each argument list, an API key named `keyName`, and a page signed in as
 * the owner, in a context of its own (axe needs a page of a context made with newContext()).
 */
export async function signedInOwner(
  browser: Browser,
  { email, password, lines, keyName = "e2e" }: { email: string; password: string; lines: string[][]; keyName?: string },
): Promise<{ app: TestServer; page: Page; key: string }> {
  const app = await testServer({});
  app.admin("account", "create", "--email", email, "--password", password);
  for (const line of lines) app.admin("line", "create", "--account", email, ...line);
  const key = /sk_live_[\w-]+/.exec(app.admin("key", "create", "--account", email, "--name", keyName))![0];
  const page = await (await browser.newContext({ baseURL: app.base })).newPage();
  await signIn(page, email, password);
  return { app, page, key };
}

/**
 * Whether fetch failed on a kept-alive connection the server closed as the request went out
 * (its keepAliveTimeout ran out while the spec ran the admin CLI): nothing reached the server.
 */
function closedIdleConnection(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string } }).cause;
  return err instanceof TypeError && (cause?.code === "UND_ERR_SOCKET" || cause?.code === "ECONNRESET");
}

/**
 * A /v1 call as a client makes it, with `key` on `base`: a 503 (the server shedding load) is
 * tried again after its Retry-After, and so is a request that met a kept-alive connection the
 * server had just closed; any other error throws with the answer.
 */
export async function apiCall(base: string, key: string, method: string, route: string, body?: unknown) {
  let res: Response;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await fetch(`${base}${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      if (attempt < 3 && closedIdleConnection(err)) continue;
      throw err;
    }
    if (res.status !== 503 || attempt === 5) break;
    await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get("retry-after") ?? 1)));
  }
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
