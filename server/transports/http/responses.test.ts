import { describe, expect, it } from "vitest";
import { captureLog } from "@/tests/log-capture";
import { ApiError } from "../../kernel/errors";
import { errorResponse, jsonTextResponse } from "./responses";

describe("error responses", () => {
  it("an unexpected error is a 500 api_error with the request ID and no internals", async () => {
    const { result: res, records } = await captureLog(() => errorResponse(new Error("secret connection string postgres://u:p@db"), "req_test"));
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      error: { type: "api_error", code: "internal_error", message: expect.stringContaining("req_test") },
      request_id: "req_test",
    });
    expect(text).not.toContain("postgres://");
    expect(text).not.toContain("at ");
    // The cause goes to the log (with its stack, under the same request ID), not to the client.
    const [logged] = records as [{ err: { stack: string } }];
    expect(logged).toMatchObject({ level: 50, request_id: "req_test", msg: "unexpected error", err: { message: expect.stringContaining("postgres://") } });
    expect(logged.err.stack).toMatch(/^Error: secret connection string/);
  });

  it("ApiError headers (Retry-After) reach the response", () => {
    const res = errorResponse(new ApiError("rate_limit_exceeded", "slow down", { headers: { "Retry-After": "7" } }), "req_x");
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(res.headers.get("request-id")).toBe("req_x");
  });

  it("pre-serialized bodies get the request_id appended", async () => {
    expect(await jsonTextResponse(200, '{"a":1}', "req_1").json()).toEqual({ a: 1, request_id: "req_1" });
    expect(await jsonTextResponse(200, "{}", "req_2").json()).toEqual({ request_id: "req_2" });
  });
});
