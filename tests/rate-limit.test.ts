import { describe, expect, it } from "vitest";
import { hit } from "@/server/services/access/rate-limit";
import { get, makeAccount, makeKey } from "./helpers";

describe("hourly per-key rate limit", () => {
  it("counts down in X-RateLimit headers, then answers 429 rate_limit_exceeded with Retry-After", async () => {
    const f = await makeAccount();
    const key = await makeKey(f.accountId, { rateLimitPerHour: 3 });
    for (let i = 1; i <= 3; i++) {
      const res = await get("/v1/lines", key);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBe("3");
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(3 - i));
      const reset = Number(res.headers.get("x-ratelimit-reset"));
      expect(reset * 1000).toBeGreaterThan(Date.now());
      expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    }
    const limited = await get("/v1/lines", key);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(limited.body.request_id).toMatch(/^req_/);

    // Other keys of the same account have their own quota.
    expect((await get("/v1/lines", f.key)).status).toBe(200);
  });

  it("uses the documented default quota when the key has no override", async () => {
    const f = await makeAccount();
    const res = await get("/v1/lines", f.key);
    expect(res.headers.get("x-ratelimit-limit")).toBe("10000");
  });

  it("is exact under concurrency (one atomic counter shared by every instance)", async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => hit("test:concurrent", 25, 3_600_000)));
    expect(results.filter((r) => r.allowed)).toHaveLength(25);
    expect(new Set(results.map((r) => r.count)).size).toBe(40);
  });

  it("starts a fresh window each hour", async () => {
    const hour = 3_600_000;
    const t0 = Math.floor(Date.now() / hour) * hour + 10;
    expect((await hit("test:window", 1, hour, 1, t0)).allowed).toBe(true);
    expect((await hit("test:window", 1, hour, 1, t0 + 5)).allowed).toBe(false);
    expect((await hit("test:window", 1, hour, 1, t0 + hour)).allowed).toBe(true);
  });
});

describe("leased quota across app instances", () => {
  it("several instances sharing one counter never admit more than the limit, and waste little", async () => {
    const { QuotaLeaser } = await import("@/server/services/access/quota-lease");
    const instances = [new QuotaLeaser(), new QuotaLeaser(), new QuotaLeaser()];
    const limit = 1000;
    let allowed = 0;
    for (let i = 0; i < 1500; i++) {
      const batch = await Promise.all(instances.map((inst) => inst.consume("test:instances", limit, 3_600_000)));
      allowed += batch.filter((r) => r.allowed).length;
    }
    expect(allowed).toBeLessThanOrEqual(limit);
    expect(allowed).toBeGreaterThanOrEqual(limit - 3 * 5);
  });

  it("small limits are exact: every request leases one token", async () => {
    const { QuotaLeaser, batchSize } = await import("@/server/services/access/quota-lease");
    expect(batchSize(3, 0)).toBe(1);
    expect(batchSize(10_000, 0)).toBe(100);
    expect(batchSize(10_000, 9_990)).toBe(1);
    const a = new QuotaLeaser();
    const b = new QuotaLeaser();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await a.consume("test:small", 5, 3_600_000), await b.consume("test:small", 5, 3_600_000));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
  });
});
