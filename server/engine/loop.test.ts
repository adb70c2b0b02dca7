import { describe, expect, it } from "vitest";
import { Sleeper } from "./loop";

/** Whether `sleep` has ended by the time the event loop has gone round once. */
const endedAtOnce = (sleep: Promise<void>) =>
  Promise.race([sleep.then(() => true), new Promise<boolean>((r) => setImmediate(() => r(false)))]);

describe("Sleeper", () => {
  it("a wake ends a sleep under way", async () => {
    const s = new Sleeper();
    const slept = s.sleep(10_000);
    expect(await endedAtOnce(slept)).toBe(false);
    s.wake();
    expect(await endedAtOnce(slept)).toBe(true);
  });

  it("a wake with no sleep under way is kept for the next sleep only when the sleeper remembers wakes", async () => {
    const remembering = new Sleeper({ remembers: true });
    remembering.wake(); // mid-round: a write landed
    expect(await endedAtOnce(remembering.sleep(10_000))).toBe(true);
    const next = remembering.sleep(30); // kept once: the sleep after it sleeps
    expect(await endedAtOnce(next)).toBe(false);
    await next;

    const forgetting = new Sleeper();
    forgetting.wake();
    const sleep = forgetting.sleep(30);
    expect(await endedAtOnce(sleep)).toBe(false);
    await sleep;
  });
});
