// Calls of one event-loop turn go as one call on the batch; a batch that fails is split in halves
// down to single inputs, so one bad input fails only its own caller.

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

export interface BatcherOptions {
  max?: number;
  lingerMs?: number;
  /** 1 on a single-connection database (PGlite): a second statement would only queue, so calls merge into the next batch. */
  maxInFlight?: () => number;
}

export function batcher<I, O>(run: (inputs: I[]) => Promise<O[]>, options: BatcherOptions = {}): (input: I) => Promise<O> {
  const { max = 500, lingerMs = 0, maxInFlight = () => Infinity } = options;
  let queue: Pending<I, O>[] = [];
  let scheduled = false;
  let inFlight = 0;

  async function settle(batch: Pending<I, O>[]): Promise<void> {
    try {
      const outputs = await run(batch.map((p) => p.input));
      batch.forEach((p, i) => p.resolve(outputs[i]!));
    } catch (err) {
      if (batch.length === 1) batch[0]!.reject(err);
      else {
        // One half after the other: on a database with one connection they would only queue.
        const half = Math.ceil(batch.length / 2);
        await settle(batch.slice(0, half));
        await settle(batch.slice(half));
      }
    }
  }

  function flush(): void {
    scheduled = false;
    const limit = maxInFlight();
    while (queue.length && inFlight < limit) {
      inFlight++;
      void settle(queue.splice(0, max)).finally(() => {
        inFlight--;
        if (queue.length && !scheduled) flush();
      });
    }
  }

  return (input: I) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        if (lingerMs > 0) setTimeout(flush, lingerMs);
        else setImmediate(flush);
      }
    });
}
