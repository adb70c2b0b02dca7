// Next.js calls register() once per server process, before serving requests.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { startServer } = await import("./server/boot/startup");
    const { V1_FAST_ROUTES, OTHER_FAST_ROUTES } = await import("./app/v1/route-table");
    try {
      await startServer({ fastRoutes: { ...V1_FAST_ROUTES, ...OTHER_FAST_ROUTES } });
    } catch (err) {
      // A process that could not start (database unreachable, a failed migration) would answer
      // every request with 500, /healthz included: exit instead, so the orchestrator restarts it
      // and a load balancer never sees it up.
      console.error("Relay could not start:", err);
      process.exit(1);
    }
  }
}
