import { describe, expect, it } from "vitest";
import { batcher } from "./batcher";

describe("batcher", () => {
  it("runs calls of one event-loop turn as one batch, each caller getting its own result", async () => {
    const batches: number[][] = [];
    const double = batcher<number, number>(async (xs) => {
      batches.push(xs);
      return xs.map((x) => x * 2);
    });
    expect(await Promise.all([1, 2, 3].map(double))).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it("with maxInFlight 1, calls made while a batch runs wait and go together in the next one", async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const run = batcher<number, number>(
      async (xs) => {
        batches.push(xs);
        if (batches.length === 1) await gate;
        return xs;
      },
      { maxInFlight: () => 1 },
    );
    const first = run(1);
    await new Promise((r) => setImmediate(r)); // the first batch is running
    const later: Promise<number>[] = [];
    for (let i = 2; i <= 5; i++) {
      later.push(run(i));
      await new Promise((r) => setImmediate(r)); // each in its own turn: without the cap, four more batches
    }
    release();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4, 5]);
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
  });

  it("fails only the caller whose input fails when a batch fails as a whole", async () => {
    const run = batcher<number, number>(async (xs) => {
      if (xs.includes(13)) throw new Error("unlucky");
      return xs;
    });
    const results = await Promise.allSettled([run(1), run(13), run(2)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  });

  it("splits a failing batch in halves, so a batch too large for one statement still gets through together", async () => {
    const sizes: number[] = [];
    const run = batcher<number, number>(async (xs) => {
      sizes.push(xs.length);
      if (xs.length > 3) throw new Error("too many parameters");
      return xs;
    });
    const inputs = Array.from({ length: 12 }, (_, i) => i);
    expect(await Promise.all(inputs.map(run))).toEqual(inputs);
    // 12 fails, 6 fails, then halves of 3 succeed: 4 statements for the rows, not 12.
    expect(sizes.filter((n) => n <= 3)).toEqual([3, 3, 3, 3]);
  });
});

