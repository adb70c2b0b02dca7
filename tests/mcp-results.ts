import { z } from "zod";

// What the MCP tests read back, parsed at the boundary instead of trusted: a tool's
// structuredContent (a /v1 object or page, a wait result, or the /v1 error envelope) and the
// JSON-RPC lines `relay mcp` writes.

const Row = z.looseObject({ id: z.string(), text: z.string().nullable().optional(), identifier: z.string().optional() });

export const ToolData = z.looseObject({
  object: z.string().optional(),
  id: z.string().optional(),
  status: z.string().optional(),
  request_id: z.string().optional(),
  retry_after: z.number().optional(),
  /** The error envelope's object on a refusal; an outbox item's own `error` (a string or null) otherwise. */
  error: z.union([z.looseObject({ code: z.string() }), z.string(), z.null()]).optional(),
  data: z.array(Row).optional(),
  message: z.looseObject({ text: z.string().nullable() }).optional(),
});
export type ToolData = z.output<typeof ToolData>;

const ErrorObject = z.object({ type: z.string(), code: z.string(), message: z.string(), param: z.string().optional() });

/** The /v1 error of a refused tool call. */
export function errorOf(data: ToolData): z.output<typeof ErrorObject> {
  return ErrorObject.parse(data.error);
}

export const RpcLine = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  result: z.unknown().optional(),
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }).optional(),
});
export type RpcLine = z.output<typeof RpcLine>;
