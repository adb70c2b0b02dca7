// Coalesces calls made in the same turn of the event loop into one call on the whole batch
// (one INSERT for many concurrent writes, like a producer's linger). Each caller gets its own
// result or error; a batch that fails as a whole is split in halves and each half retried,
// down to single inputs, so one bad input fails only its own caller (and the rest still go
// together: a batch too large for one statement gets through in smaller ones).

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

export interface BatcherOptions {
  /** Most inputs per call (default 500). */
  max?: number;
  /** > 0 waits that long for more calls (a throughput path where a few ms do not matter). */
  lingerMs?: number;
  /**
   * Batches in flight at once (default unlimited). With 1, calls made while a batch runs wait
   * and go together in the next one: on a database with a single connection (embedded
   * PGlite) a second statement would only queue behind the first anyway, so merging them
   * saves a statement per batch at no cost in latency.
   */
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
