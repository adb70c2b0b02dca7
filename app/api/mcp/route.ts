// POST /api/mcp - the MCP server (Streamable HTTP), authenticated with an API key (docs/agents.md).
// Every other method answers 405 with the envelope and Allow, here and on the start script's fast path.
import { handleMcp, mcpPreflight } from "@/server/transports/mcp/http";

export const POST = handleMcp;
export const GET = handleMcp;
export const DELETE = handleMcp;
export const PUT = handleMcp;
export const PATCH = handleMcp;
export const OPTIONS = mcpPreflight;
