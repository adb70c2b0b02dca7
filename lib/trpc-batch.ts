// The dashboard's tRPC server refuses larger batches (batch_too_large), and its client splits
// its calls into batches of this size.

/** Calls one batched tRPC request may carry. */
export const MAX_TRPC_BATCH = 10;
