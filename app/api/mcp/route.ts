// POST /api/mcp - the MCP server (Streamable HTTP), authenticated with an API key (docs/agents.md)
import { handleMcp, mcpPreflight } from "@/server/transports/mcp/http";

export const POST = handleMcp;
export const GET = handleMcp;
export const DELETE = handleMcp;
export const OPTIONS = mcpPreflight;
