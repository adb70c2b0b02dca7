// npm run client:generate - writes packages/client/src/generated.ts: the request and response
// types of every /v1 operation, emitted from the same zod schemas the server parses and
// answers with (server/transports/openapi/operations.ts), plus the operation table the client dispatches on.
// Committed; tests/client-generated.test.ts fails when it is out of date.
import { writeFileSync } from "node:fs";
import { z } from "zod";
import type { Operation } from "../server/transports/openapi/operation-shape";
import { OPERATIONS } from "../server/transports/openapi/operations";
import { WEBHOOK_EVENTS } from "../server/webhooks/event-names";

type JsonSchema = {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  description?: string;
  $defs?: Record<string, JsonSchema>;
};

const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1);
const doc = (text: string | undefined, indent: string) => (text ? `${indent}/** ${text.replaceAll("*/", "*\\/")} */\n` : "");

/** A TypeScript type for a JSON Schema (the subset z.toJSONSchema produces for these schemas). */
function emit(schema: JsonSchema, indent = ""): string {
  if (schema.$ref) return schema.$ref.replace("#/$defs/", "");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.map((s) => wrap(emit(s, indent))).join(" | ");
  if (schema.allOf) return schema.allOf.map((s) => wrap(emit(s, indent))).join(" & ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) return "unknown";
  return types.map((t) => wrap(emitType(t, schema, indent))).join(" | ");
}

const wrap = (t: string) => (/^[\w".[\]<>]+$|^\{[\s\S]*\}$/.test(t) ? t : `(${t})`);

function emitType(type: string, schema: JsonSchema, indent: string): string {
  switch (type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `${wrap(schema.items ? emit(schema.items, indent) : "unknown")}[]`;
    case "object": {
      const inner = `${indent}  `;
      const required = new Set(schema.required ?? []);
      const fields = Object.entries(schema.properties ?? {}).map(
        ([name, prop]) => `${doc(prop.description, inner)}${inner}${name}${required.has(name) ? "" : "?"}: ${emit(prop, inner)};\n`,
      );
      if (typeof schema.additionalProperties === "object") fields.push(`${inner}[key: string]: ${emit(schema.additionalProperties, inner)};\n`);
      else if (schema.additionalProperties !== false && fields.length === 0) return "Record<string, unknown>";
      return `{\n${fields.join("")}${indent}}`;
    }
    default:
      throw new Error(`generate-client: unsupported JSON Schema type ${type}`);
  }
}

const defs = new Map<string, string>();

/** Converts a zod schema; its named sub-schemas (`.meta({ id })`) become shared named types. */
function convert(schema: z.ZodType, io: "input" | "output"): string {
  const json = z.toJSONSchema(schema, { io, target: "draft-2020-12" }) as JsonSchema;
  for (const [name, def] of Object.entries(json.$defs ?? {})) {
    const text = `${doc(def.description, "")}export type ${name} = ${emit(def)};\n`;
    const seen = defs.get(name);
    if (seen !== undefined && seen !== text) throw new Error(`generate-client: two different schemas are named ${name}`);
    defs.set(name, text);
  }
  const { $defs: _, ...rest } = json;
  return emit(rest);
}

const operationTypes: string[] = [];
const table: string[] = [];
const map: string[] = [];
for (const [id, op] of Object.entries(OPERATIONS) as [string, Operation][]) {
  const name = pascal(id);
  const body = op.rawBody ? "raw" : op.body ? "json" : "none";
  const entry: string[] = [];
  if (op.query) {
    operationTypes.push(`/** ${op.method} ${op.path} query. */\nexport type ${name}Query = ${convert(op.query, "input")};\n`);
    entry.push(`query: ${name}Query`);
  }
  if (op.body) {
    operationTypes.push(`/** ${op.method} ${op.path} body. */\nexport type ${name}Body = ${convert(op.body, "input")};\n`);
    entry.push(`body: ${name}Body`);
  }
  if (op.response) {
    operationTypes.push(`/** ${op.method} ${op.path} response. */\nexport type ${name}Response = ${convert(op.response, "output")};\n`);
    entry.push(`response: ${name}Response`);
  }
  table.push(
    `  ${id}: { method: "${op.method}", path: "${op.path}", body: "${body}", redirect: ${Boolean(op.redirect)}, stream: ${Boolean(op.stream)} },\n`,
  );
  map.push(`  ${id}: { ${entry.join("; ")} };\n`);
}

const output = `// Generated by scripts/generate-client.ts from server/transports/openapi/operations.ts (npm run client:generate).
// Do not edit: tests/client-generated.test.ts fails when this file is out of date.

${[...defs.values()].join("\n")}
${operationTypes.join("\n")}
/** Request and response types per operation. */
export interface Operations {
${map.join("")}}

/** How each operation is called: method, path and the kind of body it takes. */
export const OPERATIONS = {
${table.join("")}} as const;

export type OperationId = keyof typeof OPERATIONS;

/** The events a webhook can subscribe to. */
export const WEBHOOK_EVENTS = ${JSON.stringify(WEBHOOK_EVENTS)} as const;
export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];
`;

/** The generated source (the test compares it with the committed file). */
export function generatedClient(): string {
  return output;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop()!)) {
  const target = new URL("../packages/client/src/generated.ts", import.meta.url);
  writeFileSync(target, output);
  console.log(`wrote ${target.pathname}`);
}
