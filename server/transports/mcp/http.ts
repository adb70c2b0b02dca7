import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticate } from "../../services/access/api-keys";
import { annotateRequest } from "../../observability/request-context";
import { ApiError } from "../../kernel/errors";
import { jsonBodyLimit, readText } from "../http/body";
import { CORS_HEADERS, errorResponse, requestIdOf } from "../http/responses";
import { parseJson } from "../http/validation";
import { callTool, mcpServer } from "./server";
import { directAnswer, directToolCall } from "./direct";
import { parseError, rpcErrorResponse, screen, withErrors } from "./jsonrpc";

// POST /api/mcp: Streamable HTTP, stateless, a server per request, JSON answers (docs/agents.md).

const MCP_HEADERS = { ...CORS_HEADERS, "Access-Control-Allow-Headers": "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID" };

async function handleMcp(request: Request): Promise<Response> {
  const requestId = requestIdOf(request.headers);
  const answer = (response: Response) => {
    response.headers.set("Request-Id", requestId);
    for (const [k, v] of Object.entries(MCP_HEADERS)) response.headers.set(k, v);
    return response;
  };
  try {
    if (request.method !== "POST") {
      throw new ApiError("method_not_allowed", `${request.method} is not used by this MCP server: it is stateless and answers POST requests.`, {
        headers: { Allow: "POST, OPTIONS" },
      });
    }
    const authorization = request.headers.get("authorization");
    const actor = await authenticate(authorization);
    annotateRequest(requestId, actor);
    const text = await readText(request, jsonBodyLimit());
    let body: unknown;
    try {
      body = parseJson(text, "The body");
    } catch (err) {
      return answer(rpcErrorResponse({ errors: [parseError(err instanceof Error ? err.message : "the body is not JSON.")], batch: false }, requestId));
    }
    const recheckKey = async () => void (await authenticate(authorization));
    const direct = directToolCall(body, request.headers);
    if (direct) {
      const result = await callTool({ actor, requestId, recheckKey, signal: request.signal }, direct.name, direct.arguments);
      return answer(directAnswer(direct.id, result));
    }
    const screened = screen(body);
    if (screened.rest === undefined) return answer(rpcErrorResponse(screened, requestId));
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = mcpServer({ actor, requestId, requestSignal: request.signal, recheckKey });
    await server.connect(transport);
    // Not closed: in JSON mode nothing outlives the answer, and closing only builds a
    // "connection closed" error for requests that no longer wait.
    return answer(await withErrors(await transport.handleRequest(request, { parsedBody: screened.rest }), screened, requestId));
  } catch (err) {
    return answer(errorResponse(err, requestId));
  }
}

function mcpPreflight(request: Request): Response {
  return new Response(null, { status: 204, headers: { ...MCP_HEADERS, "Request-Id": requestIdOf(request.headers) } });
}

export const MCP_ROUTE = { GET: handleMcp, POST: handleMcp, PUT: handleMcp, PATCH: handleMcp, DELETE: handleMcp, OPTIONS: mcpPreflight };
