import { createCallerFactory, router } from "./init";
import { accountRouter, keysRouter } from "./routers/account";
import { chatsRouter, linesRouter, outboxRouter, sandboxRouter } from "./routers/messaging";
import { poolsRouter } from "./routers/pools";
import { searchRouter } from "./routers/search";
import { simulatorRouter } from "./routers/simulator";
import { statsRouter } from "./routers/stats";
import { webhooksRouter } from "./routers/webhooks";

// The dashboard's API (served at /api/trpc).
export const appRouter = router({
  account: accountRouter,
  keys: keysRouter,
  lines: linesRouter,
  chats: chatsRouter,
  outbox: outboxRouter,
  pools: poolsRouter,
  sandbox: sandboxRouter,
  webhooks: webhooksRouter,
  simulator: simulatorRouter,
  stats: statsRouter,
  search: searchRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
