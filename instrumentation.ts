export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { startServer } = await import("./server/boot/startup");
    const { fastRouteTable } = await import("./server/transports/http/v1-routes");
    const { MCP_ROUTE } = await import("./server/transports/mcp/http");
    try {
      await startServer({ fastRoutes: { ...fastRouteTable(), "/api/mcp": MCP_ROUTE } });
    } catch (err) {
      // Exit rather than answer every request (/healthz too) with 500: the orchestrator restarts us.
      console.error("Relay could not start:", err);
      process.exit(1);
    }
  }
}
