export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { startServer } = await import("./server/boot/startup");
    const { V1_FAST_ROUTES, OTHER_FAST_ROUTES } = await import("./app/v1/route-table");
    try {
      await startServer({ fastRoutes: { ...V1_FAST_ROUTES, ...OTHER_FAST_ROUTES } });
    } catch (err) {
      // Exit rather than answer every request (/healthz too) with 500: the orchestrator restarts us.
      console.error("Relay could not start:", err);
      process.exit(1);
    }
  }
}
