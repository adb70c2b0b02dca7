import { expect, type Page } from "@playwright/test";

/** Signs in on /sign-in and waits for the overview's welcome. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto("/sign-in");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { level: 1, name: /^Welcome/ })).toBeVisible();
}

/**
 * A /v1 call as a client makes it, with `key` on `base`: a 503 (the server shedding load) is
 * tried again after its Retry-After; any other error throws with the answer.
 */
export async function apiCall(base: string, key: string, method: string, route: string, body?: unknown) {
  let res: Response;
  for (let attempt = 1; ; attempt++) {
    res = await fetch(`${base}${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status !== 503 || attempt === 5) break;
    await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get("retry-after") ?? 1)));
  }
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
