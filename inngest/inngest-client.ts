import { Inngest } from "inngest";
import { config } from "@/server/kernel/config";

/** "1"/"true": a dev server; "0"/"false": cloud or self-hosted (signed); a URL is left to the SDK. */
function devMode(value: string | undefined): boolean | undefined {
  if (!value) return undefined;
  const v = value.toLowerCase();
  if (["1", "true"].includes(v)) return true;
  if (["0", "false"].includes(v)) return false;
  return undefined;
}

// The SDK retries a failed send five times but has no timeout: a server that accepts connections
// and never answers would stall a write.
function fetchWithTimeout(ms: number): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(ms) });
    } catch (err) {
      if (err instanceof Error && err.name === "TimeoutError") throw new TypeError(`fetch failed: no answer within ${ms} ms`, { cause: err });
      throw err;
    }
  };
}

function createInngestClient(options: { fetch?: typeof fetch } = {}) {
  const c = config();
  return new Inngest({
    id: "relay",
    eventKey: c.INNGEST_EVENT_KEY || undefined,
    signingKey: c.INNGEST_SIGNING_KEY || undefined,
    baseUrl: c.INNGEST_BASE_URL,
    isDev: devMode(c.INNGEST_DEV),
    fetch: options.fetch ?? fetchWithTimeout(5_000),
  });
}

export const inngest = createInngestClient();
