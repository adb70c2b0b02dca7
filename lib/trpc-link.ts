import { httpBatchLink } from "@trpc/client";
import { MAX_TRPC_BATCH } from "./trpc-batch";

/** The dashboard's tRPC link, in batches the server accepts (`fetch` for tests). */
export function dashboardLink(options: { url?: string; fetch?: typeof fetch } = {}) {
  return httpBatchLink({ url: options.url ?? "/api/trpc", maxItems: MAX_TRPC_BATCH, fetch: options.fetch });
}
