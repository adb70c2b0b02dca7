export const MAX_TRPC_BATCH = 10;
