import { z } from "zod";

// The zod schemas /v1 parses and answers with, as JSON Schema 2020-12, for the documents made
// from them: the OpenAPI document (which uses 2020-12 as is) and the MCP tools' input and
// output schemas.

export type JsonSchema = Record<string, unknown>;

/**
 * `schema` as JSON Schema. zod closes output objects (additionalProperties: false); answers
 * may gain fields, and every JSON answer carries request_id besides its documented fields, so
 * answers stay open.
 */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  return z.toJSONSchema(schema, {
    io,
    target: "draft-2020-12",
    override: ({ jsonSchema }) => {
      if (io === "output" && jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
    },
  }) as JsonSchema;
}
