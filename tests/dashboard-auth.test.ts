import { afterEach, describe, expect, it } from "vitest";
import { handleAuth } from "@/server/transports/auth-route";
import { authOptions } from "@/server/services/access/session";
import { resetConfig } from "@/server/kernel/config";
import { createAccount } from "@/server/services/accounts/accounts";
import { throttleAuthAttempt } from "@/server/services/access/auth-throttle";
import { ApiError } from "@/server/kernel/errors";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { createTRPCClient } from "@trpc/client";
import { safeCallbackPath } from "@/lib/safe-callback";
import { dashboardLink } from "@/lib/trpc-link";
import { sessionActorFor } from "@/server/services/access/session";
import type { AppRouter } from "@/server/transports/trpc/router";
import { db, makeAccount } from "./helpers";

// Brute force and amplification on the dashboard's public doors: sign-in (next-auth's
// credentials callback), sign-up (tRPC) and tRPC batching; and where sign-in may send the
// browser afterwards.

afterEach(() => {
  delete process.env.TRUST_PROXY;
  delete process.env.TRUST_PROXY_HOPS;
  resetConfig();
});

function trustProxy() {
  process.env.TRUST_PROXY = "true";
  resetConfig();
}

let serial = 0;
const unique = (label: string) => `${label}-${Date.now().toString(36)}-${serial++}@example.com`;

/** What next-auth answers a wrong password (it is what runs when the attempt is let through). */
function nextAuthDouble() {
  const seen: string[] = [];
  const handler = async (req: Request) => {
    seen.push(String((await req.formData()).get("email")));
    return Response.json({ url: "http://localhost:3000/api/auth/error?error=CredentialsSignin" }, { status: 401 });
  };
  return { seen, handler };
}

/** A sign-in POST as next-auth's signIn("credentials", { redirect: false }) sends it. */
function signInRequest(email: string, forwardedFor?: string) {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (forwardedFor) headers["x-forwarded-for"] = forwardedFor;
  const body = new URLSearchParams({ email, password: "guess-123456", csrfToken: "t", callbackUrl: "/dashboard", json: "true" });
  return new Request("http://localhost:3000/api/auth/callback/credentials", { method: "POST", headers, body });
}

const context = { params: Promise.resolve({ nextauth: ["callback", "credentials"] }) };

async function signIn(email: string, inner: ReturnType<typeof nextAuthDouble>, forwardedFor?: string) {
  const res = await handleAuth(signInRequest(email, forwardedFor), context, inner.handler);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** What the auth route answers a refused sign-in: the API's error envelope plus next-auth's `url`. */
interface ThrottledBody {
  error?: { type: string; code: string; message: string };
  request_id?: string;
  url?: string;
}

function expectThrottled(res: { status: number; headers: Headers; body: ThrottledBody }) {
  expect(res.status).toBe(429);
  expect(res.body.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
  expect(res.body.request_id).toMatch(/^req_/);
  expect(res.headers.get("request-id")).toBe(res.body.request_id);
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(15 * 60);
}

describe("sign-in throttling", () => {
  it("allows 10 attempts per email and address in 15 minutes, then answers 429 without checking the password", async () => {
    trustProxy();
    const inner = nextAuthDouble();
    const email = unique("victim");
    for (let i = 0; i < 10; i++) expect((await signIn(email, inner, "198.51.100.1")).status).toBe(401);
    const refused = await signIn(email.toUpperCase(), inner, "198.51.100.1");
    expectThrottled(refused);
    // next-auth's signIn() reads the error from `url`; the sign-in page shows it.
    expect(new URL(refused.body.url).searchParams.get("error")).toBe("rate_limit_exceeded");
    expect(inner.seen).toHaveLength(10);
    expect((await signIn(unique("other"), inner, "198.51.100.1")).status).toBe(401);
    // Someone else spending the budget does not lock the owner out: their address has its own.
    expect((await signIn(email, inner, "198.51.100.2")).status).toBe(401);
  });

  it("allows 30 attempts per client address (X-Forwarded-For's entry TRUST_PROXY_HOPS from the right)", async () => {
    trustProxy();
    const inner = nextAuthDouble();
    // What the client wrote into the header itself (left of the proxy's entry) changes nothing.
    for (let i = 0; i < 30; i++) expect((await signIn(unique("spray"), inner, `10.0.${i}.1, 203.0.113.7`)).status).toBe(401);
    expectThrottled(await signIn(unique("spray"), inner, "10.9.9.9, 203.0.113.7"));
    expect((await signIn(unique("spray"), inner, "203.0.113.7, 203.0.113.8")).status).toBe(401);
    // Two proxies: the second entry from the right.
    process.env.TRUST_PROXY_HOPS = "2";
    resetConfig();
    expectThrottled(await signIn(unique("spray"), inner, "198.51.100.200, 203.0.113.7, 10.0.0.1"));
    expect((await signIn(unique("spray"), inner, "203.0.113.7, 203.0.113.9, 10.0.0.1")).status).toBe(401);
    expect(inner.seen).toHaveLength(32);
  });

  it("without TRUST_PROXY a forged X-Forwarded-For buys nothing: unknown addresses share one budget", async () => {
    const inner = nextAuthDouble();
    const attempts = Array.from({ length: 300 }, (_, i) => signIn(unique("forged"), inner, `192.0.2.${i % 250}`));
    expect((await Promise.all(attempts)).every((r) => r.status === 401)).toBe(true);
    expectThrottled(await signIn(unique("forged"), inner, "192.0.2.251"));
    expect(inner.seen).toHaveLength(300);
  });
});

/** A tRPC call over HTTP, signed out, as the sign-up page makes it. */
async function trpc(path: string, body: unknown, headers: Record<string, string> = {}, search = "") {
  const req = new Request(`http://localhost:3000/api/trpc/${path}${search}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const res = await handleTrpc(req, async () => null);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

describe("throttle windows", () => {
  // Regression: the windows were fixed 15-minute buckets, so attempts spent just before a
  // boundary were forgotten just after it (20 guesses in seconds, and a CI run that crossed
  // 09:30 saw the 11th attempt let through).
  const WINDOW = 15 * 60_000;
  const boundary = Math.ceil(Date.now() / WINDOW) * WINDOW + 10 * WINDOW;
  const attempt = (email: string, at: number) =>
    throttleAuthAttempt("sign_in", { ip: null, email }, at).then(
      () => "allowed",
      (e: unknown) => (e instanceof ApiError ? `${e.status} ${e.code} ${e.headers?.["Retry-After"]}` : Promise.reject(e)),
    );

  it("a burst across a window boundary gets no second budget", async () => {
    const email = unique("boundary");
    for (let i = 0; i < 10; i++) expect(await attempt(email, boundary - 2_000 + i)).toBe("allowed");
    expect(await attempt(email, boundary + 1_000)).toMatch(/^429 rate_limit_exceeded \d+$/);
  });

  it("lets attempts back in as the earlier ones slide out, and says when", async () => {
    const email = unique("sliding");
    for (let i = 0; i < 10; i++) expect(await attempt(email, boundary - WINDOW / 2 + i)).toBe("allowed");
    const refused = await attempt(email, boundary + 1_000);
    const retryAfter = Number(refused.split(" ")[2]);
    expect(retryAfter).toBeGreaterThan(1);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // Half the window later the first window's attempts weigh about half: room again.
    expect(await attempt(email, boundary + retryAfter * 1000 + 1_000)).toBe("allowed");
  });
});

describe("sign-up throttling and tRPC batches", () => {
  it("allows 5 sign-ups per email in 15 minutes, then 429 rate_limit_exceeded with Retry-After", async () => {
    const email = unique("signup");
    await createAccount({ email, password: "correct horse battery" });
    for (let i = 0; i < 5; i++) {
      const taken = await trpc("account.signUp", { email, password: "another password" });
      expect(taken.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "email" });
    }
    const refused = await trpc("account.signUp", { email, password: "another password" });
    expect(refused.status).toBe(429);
    expect(refused.body.error.data).toMatchObject({ code: "rate_limit_exceeded", requestId: expect.stringMatching(/^req_/) });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("allows 10 sign-ups per client address, then refuses without creating the account", async () => {
    trustProxy();
    const ip = { "x-forwarded-for": "203.0.113.50" };
    for (let i = 0; i < 10; i++) {
      const email = unique("addr");
      await createAccount({ email }); // taken: refused without hashing, but still an attempt
      expect((await trpc("account.signUp", { email, password: "correct horse battery" }, ip)).status).toBe(400);
    }
    const fresh = unique("addr");
    const refused = await trpc("account.signUp", { email: fresh, password: "correct horse battery" }, ip);
    expect(refused.status).toBe(429);
    expect(refused.body.error.data.code).toBe("rate_limit_exceeded");
    expect(await (await db()).account.findUnique({ where: { email: fresh } })).toBeNull();
    const elsewhere = await trpc("account.signUp", { email: fresh, password: "correct horse battery" }, { "x-forwarded-for": "203.0.113.51" });
    expect(elsewhere.status).toBe(200);
  });

  it("refuses a batch of more than 10 calls with 400 batch_too_large, running none of them", async () => {
    const emails = Array.from({ length: 11 }, () => unique("batch"));
    const input = Object.fromEntries(emails.map((email, i) => [i, { email, password: "correct horse battery" }]));
    const res = await trpc(Array(11).fill("account.signUp").join(","), input, {}, "?batch=1");
    expect(res.status).toBe(400);
    const errors = (Array.isArray(res.body) ? res.body : [res.body]).map((r: { error: { message: string; data: unknown } }) => r.error);
    expect(errors[0]!.data).toMatchObject({ code: "batch_too_large", requestId: expect.stringMatching(/^req_/) });
    expect(errors[0]!.message).toMatch(/at most 10 calls/);
    expect(res.headers.get("request-id")).toBe((errors[0]!.data as { requestId: string }).requestId);
    expect(await (await db()).account.count({ where: { email: { in: emails } } })).toBe(0);

    const two = await trpc("account.signUp,account.signUp", { 0: { email: emails[0], password: "correct horse battery" }, 1: { email: "x", password: "y" } }, {}, "?batch=1");
    expect(two.status).toBe(207);
    expect(two.body[0].result.data.email).toBe(emails[0]);
    expect(two.body[1].error.data.code).toBe("invalid_parameter_value");
  });
});

describe("the dashboard's tRPC client", () => {
  it("splits many concurrent calls into batches the server accepts", async () => {
    const f = await makeAccount();
    const sizes: number[] = [];
    const client = createTRPCClient<AppRouter>({
      links: [
        dashboardLink({
          url: "http://localhost:3000/api/trpc",
          fetch: async (input, init) => {
            const req = new Request(input, init);
            if (new URL(req.url).searchParams.get("batch") === "1") sizes.push(new URL(req.url).pathname.split(",").length);
            return handleTrpc(req, async () => sessionActorFor(f.accountId));
          },
        }),
      ],
    });
    const results = await Promise.all(Array.from({ length: 25 }, () => client.account.me.query()));
    expect(results.every((me) => me.id === f.accountId)).toBe(true);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(25);
  });
});

describe("where sign-in returns to", () => {
  const origin = "http://localhost:3000";
  it.each([
    "//evil.example",
    "//evil.example/dashboard",
    "/\\evil.example",
    "\\\\evil.example",
    "\t//evil.example",
    "/.//evil.example",
    "/dashboard/..//evil.example",
    "https://evil.example",
    "https://evil.example/dashboard",
    "http://localhost:3001/dashboard",
    "javascript:alert(document.cookie)",
    "data:text/html,<script>alert(1)</script>",
    "",
  ])("refuses %j: the page and next-auth go to /dashboard", async (callbackUrl) => {
    expect(safeCallbackPath(callbackUrl, origin)).toBe("/dashboard");
    const { callbacks } = await authOptions();
    expect(await callbacks!.redirect!({ url: callbackUrl, baseUrl: origin })).toBe(`${origin}/dashboard`);
  });

  it.each([
    ["/dashboard/keys", "/dashboard/keys"],
    ["/dashboard/chats?line=ln_1#latest", "/dashboard/chats?line=ln_1#latest"],
    [`${origin}/dashboard/outbox`, "/dashboard/outbox"],
    ["/sign-in", "/sign-in"],
  ])("keeps the same-origin path %j", async (callbackUrl, path) => {
    expect(safeCallbackPath(callbackUrl, origin)).toBe(path);
    const { callbacks } = await authOptions();
    expect(await callbacks!.redirect!({ url: callbackUrl, baseUrl: origin })).toBe(`${origin}${path}`);
  });
});
