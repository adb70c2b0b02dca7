import type { z } from "zod";
import { parseWith } from "../http/validation";

// GraphQL arguments are camelCase; the shared zod schemas of the /v1 operations are
// snake_case. Parsing through them keeps one set of rules (lengths, enums, trimming) for both
// transports; a failing field is reported as the GraphQL field (errors.ts graphqlParam).

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Arguments as the /v1 body or query: snake_case keys; null (GraphQL's "not given") dropped. */
export function restShape(args: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value !== null && value !== undefined) out[snake(key)] = value;
  }
  return out;
}

export function parseArgs<S extends z.ZodType>(schema: S, args: object): z.output<S> {
  return parseWith(schema, restShape(args));
}
