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
import { parseWith } from "../../wire/parse";
import { type ToolContext, TOOLS, TOOLS_BY_NAME } from "./tools";

// Over the low-level SDK Server, so every answer is ours: any refusal is a tool result with
// isError and the /v1 error envelope, never a protocol error (docs/agents.md).

const SERVER_INFO = { name: "relay-messaging", version: "1.0.0" };

const INSTRUCTIONS =
  "Send and receive iMessage and SMS through the owner's lines. Start with list_lines and list_chats; read a chat with read_messages before writing to it. " +
  "A contact must have written to a line before it can be messaged. send_message answers at once with a pending outbox item (follow it with get_outbox_item); " +
  "wait_for_reply waits for the contact's next message. Errors carry a code: recipient_not_allowed, reply_required, chat_paused and key_send_limit_exceeded are the owner's guardrails: do not retry them, tell the user.";

/** With the error envelope: the SDK's client checks every structuredContent, refusals included. */
function outputSchemaOf(output: z.ZodType): McpTool["outputSchema"] {
  const { $schema: _, ...schema } = jsonSchemaOf(z.union([output, ErrorSchema]), "output");
  return {
    type: "object",
    ...schema,
    properties: { request_id: { type: "string", description: "req_ ID of this call" } },
    required: ["request_id"],
  };
}

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

/** In the order the SDK's CallToolResultSchema writes them, so both paths answer the same bytes. */
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

function toolError(err: unknown, requestId: string): CallToolResult {
  const answer = errorAnswer(err, requestId);
  const { code, message } = answer.body.error;
  const retryAfter = answer.headers["Retry-After"];
  const structured = { ...answer.body, ...(retryAfter ? { retry_after: Number(retryAfter) } : {}), request_id: requestId };
  return result(`${code}: ${message}${retryAfter ? ` (retry after ${retryAfter} s)` : ""}`, structured, true);
}

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

// For elicitation, never asked for here. One per process: the SDK builds an Ajv instance per
// Server, so per request, which cost more than the tool call itself.
let validator: AjvJsonSchemaValidator | null = null;

export function mcpServer(ctx: Omit<ToolContext, "signal"> & { requestSignal?: AbortSignal }): Server {
  validator ??= new AjvJsonSchemaValidator();
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS, jsonSchemaValidator: validator });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listedTools() }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool({ ...ctx, signal: ctx.requestSignal ? AbortSignal.any([extra.signal, ctx.requestSignal]) : extra.signal }, request.params.name, request.params.arguments));
  return server;
}
