import { afterEach, describe, expect, it, vi } from "vitest";

// The route table is read from the build's manifest once per process, also when there is none
// (next dev): a missing manifest used to be looked for again on every request.

const reads = vi.hoisted(() => ({ manifest: 0 }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const readFileSync = ((file: Parameters<typeof fs.readFileSync>[0], ...rest: unknown[]) => {
    if (String(file).endsWith("routes-manifest.json")) {
      reads.manifest++;
      throw Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" });
    }
    return (fs.readFileSync as (...args: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.readFileSync;
  return { ...fs, default: { ...fs, readFileSync }, readFileSync };
});

afterEach(() => vi.restoreAllMocks());

describe("routeTemplate without a build's manifest", () => {
  it("looks for the manifest once, then folds ID segments for every request", async () => {
    const { routeTemplate } = await import("@/server/transports/ops/routes");
    for (let i = 0; i < 50; i++) expect(routeTemplate(`/api/files/file_01jz8x9k2m${i}`)).toBe("/api/files/[id]");
    expect(routeTemplate("/v1/chats")).toBe("/v1/chats");
    expect(reads.manifest).toBe(1);
  });
});

describe("routeTemplate with a build's manifest", () => {
  it("labels a /v1 operation by its declared path, not by the catch-all route that answers it", async () => {
    const { routeTemplate, tableOf } = await import("@/server/transports/ops/routes");
    const built = tableOf(["/healthz"], [{ page: "/v1/[[...path]]", regex: "^/v1(?:/(.+?))?(?:/)?$" }]);
    expect(routeTemplate("/v1/chats", built)).toBe("/v1/chats");
    expect(routeTemplate("/v1/webhooks/deliveries/resend", built)).toBe("/v1/webhooks/deliveries/resend");
    expect(routeTemplate("/v1/no-such-thing", built)).toBe("/v1/[[...path]]");
    expect(routeTemplate("/healthz", built)).toBe("/healthz");
  });
});
