import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";

// Screens a body before the SDK, which answers a message it cannot parse -32700 (valid JSON too)
// and refused params -32603 with the schema's dump: here each gets JSON-RPC's own code (-32600,
// -32602) and one sentence (docs/agents.md). The rest goes on to the SDK.

type Id = string | number;

export interface RpcError {
  jsonrpc: "2.0";
  id: Id | null;
  error: { code: number; message: string; data?: { request_id: string } };
}

/** The SDK's own schemas, which it would parse with. */
const PARAMS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
]);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is Id => typeof v === "string" || (typeof v === "number" && Number.isSafeInteger(v));
const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);
const MEMBERS = new Set(["jsonrpc", "id", "method", "params", "result", "error"]);

const error = (id: Id | null, code: number, message: string): RpcError => ({ jsonrpc: "2.0", id, error: { code, message } });

function paramsSentence(method: string, issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return `Invalid params for ${method}.`;
  const where = issue.path.map(String).join(".") || "params";
  const what = issue.message.replace(/^Invalid input: /, "").replace(/\brecord\b/, "object");
  return /received undefined$/.test(what)
    ? `Invalid params for ${method}: ${where} is missing (${what.replace(/, received undefined$/, "")}).`
    : `Invalid params for ${method}: ${where}: ${what}.`;
}

function refusal(message: unknown): RpcError | null {
  const invalid = (sentence: string, id: unknown = undefined) => error(isId(id) ? id : null, ErrorCode.InvalidRequest, `Invalid Request: ${sentence}`);
  if (!isPlainObject(message)) return invalid(`a JSON-RPC message is an object, not ${kindOf(message)}.`);
  const { id } = message;
  if (message.jsonrpc !== "2.0") return invalid('a JSON-RPC message has "jsonrpc": "2.0".', id);
  if ("id" in message && !isId(id)) return invalid(`id is a string or an integer, not ${kindOf(id)}${typeof id === "number" ? ` (${id})` : ""}.`);
  const extra = Object.keys(message).find((k) => !MEMBERS.has(k));
  if (extra !== undefined) return invalid(`"${extra.slice(0, 50)}" is not a member of a JSON-RPC message.`, id);
  if (!("method" in message)) {
    if (!("result" in message || "error" in message)) return invalid("a message has a method (a request or a notification), or a result or an error (a response).", id);
  } else if (typeof message.method !== "string") {
    return invalid(`method is a string, not ${kindOf(message.method)}.`, id);
  } else if (isId(id)) {
    if ("params" in message && !isPlainObject(message.params)) return error(id, ErrorCode.InvalidParams, `Invalid params for ${message.method}: params is an object, not ${kindOf(message.params)}.`);
    const parsed = PARAMS.get(message.method)?.safeParse(message);
    if (parsed && !parsed.success) return error(id, ErrorCode.InvalidParams, paramsSentence(message.method, parsed.error?.issues[0]));
  } else if ("params" in message && !isPlainObject(message.params)) {
    return invalid(`params is an object, not ${kindOf(message.params)}.`);
  }
  return JSONRPCMessageSchema.safeParse(message).success ? null : invalid("not a JSON-RPC 2.0 message as MCP sends them.", id);
}

export interface Screened {
  errors: RpcError[];
  /** The body, or the batch without its refused messages; undefined when nothing goes on. */
  rest: unknown;
  batch: boolean;
}

export function screen(body: unknown): Screened {
  if (!Array.isArray(body)) {
    const refused = refusal(body);
    return { errors: refused ? [refused] : [], rest: refused ? undefined : body, batch: false };
  }
  if (body.length === 0) return { errors: [error(null, ErrorCode.InvalidRequest, "Invalid Request: a batch holds at least one message.")], rest: undefined, batch: false };
  const errors: RpcError[] = [];
  const rest = body.filter((message) => {
    const refused = refusal(message);
    if (refused) errors.push(refused);
    return !refused;
  });
  return { errors, rest: rest.length ? rest : undefined, batch: true };
}

export const parseError = (sentence: string): RpcError => error(null, ErrorCode.ParseError, `Parse error: ${sentence}`);

const withRequestId = (errors: RpcError[], requestId: string) => errors.map((e) => ({ ...e, error: { ...e.error, data: { request_id: requestId } } }));

// A single message's -32600 or -32700 is 400, as the SDK's transport answers those; a params
// error 200, as the SDK's Server answers it.
export function rpcErrorResponse({ errors, batch }: Pick<Screened, "errors" | "batch">, requestId: string): Response {
  const answers = withRequestId(errors, requestId);
  const status = !batch && errors[0]!.error.code !== ErrorCode.InvalidParams ? 400 : 200;
  return Response.json(batch ? answers : answers[0], { status });
}

/** A batch gets an array, as JSON-RPC asks (the SDK answers a batch of one with its one answer). */
export async function withErrors(response: Response, { errors, batch }: Pick<Screened, "errors" | "batch">, requestId: string): Promise<Response> {
  // A refusal of the whole request (its headers, say) stands for every message.
  if (!batch || !response.ok || (response.status === 202 && !errors.length)) return response;
  const answered: unknown[] = response.status === 202 ? [] : [await response.json()].flat();
  return Response.json([...answered, ...withRequestId(errors, requestId)], { status: 200 });
}
