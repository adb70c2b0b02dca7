import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { type CallToolResult, CallToolRequestSchema, ListToolsRequestSchema, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ApiError } from "../../kernel/errors";
import { requireScope } from "../../services/access/api-keys";
import { enforceRateLimit } from "../http/api-rate-limit";
import { errorAnswer } from "../http/responses";
import { jsonSchemaOf } from "../openapi/json-schema";
import { ErrorSchema } from "../../wire/responses";
import { parseWith } from "../http/validation";
import { type ToolContext, TOOLS, TOOLS_BY_NAME } from "./tools";

// The MCP server of one request (Streamable HTTP, stateless) over the low-level SDK Server, so
// that every answer is ours: a refusal of any kind (unknown tool, bad arguments, a scope, a
// guardrail, the rate limit) is a tool result with isError and the /v1 error envelope, never a
// protocol error. Each tool call counts against the key's hourly rate limit like a /v1 request.

const SERVER_INFO = { name: "relay-messaging", version: "1.0.0" };

const INSTRUCTIONS =
  "Send and receive iMessage and SMS through the owner's lines. Start with list_lines and list_chats; read a chat with read_messages before writing to it. " +
  "A contact must have written to a line before it can be messaged. send_message answers at once with a pending outbox item (follow it with get_outbox_item); " +
  "wait_for_reply waits for the contact's next message. Errors carry a code: recipient_not_allowed, reply_required, chat_paused and key_send_limit_exceeded are the owner's guardrails: do not retry them, tell the user.";

/**
 * A tool's outputSchema: its /v1 answer or, when the result is an error, the /v1 error envelope
 * (the SDK's client checks every structuredContent against it, refusals included), each with
 * the request_id every answer carries.
 */
function outputSchemaOf(output: z.ZodType): McpTool["outputSchema"] {
  const { $schema: _, ...schema } = jsonSchemaOf(z.union([output, ErrorSchema]), "output");
  return {
    type: "object",
    ...schema,
    properties: { request_id: { type: "string", description: "req_ ID of this call" } },
    required: ["request_id"],
  };
}

/** The tools as tools/list shows them, computed once: JSON Schemas of the same zod schemas /v1 parses and answers with. */
let listed: McpTool[] | null = null;
function listedTools(): McpTool[] {
  listed ??= TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: z.toJSONSchema(t.input, { io: "input", unrepresentable: "any" }) as McpTool["inputSchema"],
    outputSchema: outputSchemaOf(t.output),
    annotations: { title: t.title, readOnlyHint: t.readOnly, destructiveHint: false, openWorldHint: true },
  }));
  return listed;
}

/**
 * A tool's result: a sentence for the model, then the structured result's JSON as text (many
 * agent apps give the model only the text; the MCP specification asks for the JSON there too),
 * in the order the SDK's CallToolResultSchema writes them, so both paths answer the same bytes.
 */
function result(sentence: string, structured: Record<string, unknown>, isError?: true): CallToolResult {
  return {
    content: [
      { type: "text", text: sentence },
      { type: "text", text: JSON.stringify(structured) },
    ],
    structuredContent: structured,
    ...(isError ? { isError } : {}),
  };
}

/** A refusal as a tool result: the /v1 error envelope as structured content, its code and message as the sentence. */
function toolError(err: unknown, requestId: string): CallToolResult {
  const answer = errorAnswer(err, requestId);
  const { code, message } = answer.body.error;
  const retryAfter = answer.headers["Retry-After"];
  const structured = { ...answer.body, ...(retryAfter ? { retry_after: Number(retryAfter) } : {}), request_id: requestId };
  return result(`${code}: ${message}${retryAfter ? ` (retry after ${retryAfter} s)` : ""}`, structured, true);
}

/** Runs one tools/call: the tool, its scope, the rate limit, its arguments, the service. */
export async function callTool(ctx: ToolContext, name: string, args: unknown): Promise<CallToolResult> {
  try {
    const tool = TOOLS_BY_NAME.get(name);
    if (!tool) {
      throw new ApiError("invalid_parameter_value", `Unknown tool '${name}'. The tools are: ${TOOLS.map((t) => t.name).join(", ")}.`, { param: "name" });
    }
    await enforceRateLimit(ctx.actor);
    requireScope(ctx.actor, tool.scope);
    const input = parseWith(tool.input, args ?? {});
    const output = await tool.run(ctx, input);
    return result(tool.summary(output as never, input as never, ctx), { ...output, request_id: ctx.requestId });
  } catch (err) {
    return toolError(err, ctx.requestId);
  }
}

/**
 * The JSON Schema validator a Server keeps for elicitation, which this server never asks for.
 * One for the process: the SDK would otherwise build a new Ajv instance with every server, that
 * is with every request, which cost more than the tool call itself.
 */
let validator: AjvJsonSchemaValidator | null = null;

/** A server for one request's caller. */
export function mcpServer(ctx: Omit<ToolContext, "signal"> & { requestSignal?: AbortSignal }): Server {
  validator ??= new AjvJsonSchemaValidator();
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS, jsonSchemaValidator: validator });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listedTools() }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool({ ...ctx, signal: ctx.requestSignal ? AbortSignal.any([extra.signal, ctx.requestSignal]) : extra.signal }, request.params.name, request.params.arguments));
  return server;
}
