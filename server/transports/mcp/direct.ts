import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";

// The hot path (docs/agents.md, Operating notes): one plain tools/call runs callTool without an
// SDK Server and transport, whose validation of its own messages cost a quarter of a send. Any
// doubt goes to the SDK; tests/mcp.test.ts compares the two answers.

export interface DirectCall {
  id: string | number;
  name: string;
  arguments: Record<string, unknown> | undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Null unless the SDK would take the request as a plain tools/call. */
export function directToolCall(body: unknown, headers: Headers): DirectCall | null {
  const accept = headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return null;
  if ((headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json") return null;
  const version = headers.get("mcp-protocol-version");
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null;
  if (!isPlainObject(body) || body.jsonrpc !== "2.0" || body.method !== "tools/call") return null;
  const { id, params } = body;
  if (!((typeof id === "string" && id !== "") || (typeof id === "number" && Number.isSafeInteger(id)))) return null;
  if (!isPlainObject(params) || typeof params.name !== "string" || "task" in params) return null;
  const keys = Object.keys(body);
  if (keys.some((k) => k !== "jsonrpc" && k !== "id" && k !== "method" && k !== "params")) return null;
  if (params._meta !== undefined && !isPlainObject(params._meta)) return null;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) return null;
  return { id, name: params.name, arguments: params.arguments as Record<string, unknown> | undefined };
}

/** Byte for byte as the SDK's transport writes it in JSON mode. */
export function directAnswer(id: string | number, result: object): Response {
  return new Response(JSON.stringify({ result, jsonrpc: "2.0", id }), { status: 200, headers: { "Content-Type": "application/json" } });
}
