import { z } from "zod";

// The /v1 zod schemas as JSON Schema 2020-12, for the OpenAPI document and the MCP tools.

export type JsonSchema = Record<string, unknown>;

// zod closes output objects (additionalProperties: false); answers stay open: they may gain
// fields, and every JSON answer carries request_id besides its documented fields.
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  return z.toJSONSchema(schema, {
    io,
    target: "draft-2020-12",
    override: ({ jsonSchema }) => {
      if (io === "output" && jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
    },
  }) as JsonSchema;
}
