// POST /api/mcp - the MCP server (Streamable HTTP), authenticated with an API key (docs/agents.md).
// Every other method answers 405 with the envelope and Allow, here and on the start script's fast path.
import { MCP_ROUTE } from "@/server/transports/mcp/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = MCP_ROUTE;
