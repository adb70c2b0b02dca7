import { httpBatchLink } from "@trpc/client";
import { MAX_TRPC_BATCH } from "./trpc-batch";

export function dashboardLink(options: { url?: string; fetch?: typeof fetch } = {}) {
  return httpBatchLink({ url: options.url ?? "/api/trpc", maxItems: MAX_TRPC_BATCH, fetch: options.fetch });
}
