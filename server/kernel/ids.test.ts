import { describe, expect, it } from "vitest";
import { hasPrefix, isId, newId } from "./ids";

describe("ids", () => {
  it("are prefixed, well-formed and sort by creation time", () => {
    const a = newId("message", 1_700_000_000_000);
    const b = newId("message", 1_700_000_000_001);
    expect(a).toMatch(/^msg_[0-9a-z]{26}$/);
    expect(isId("message", a)).toBe(true);
    expect(isId("chat", a)).toBe(false);
    expect(hasPrefix("message", "msg_anything")).toBe(true);
    expect(a < b).toBe(true);
    expect(new Set(Array.from({ length: 1000 }, () => newId("chat"))).size).toBe(1000);
  });
});
