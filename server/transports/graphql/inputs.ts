import type { z } from "zod";
import { ApiError } from "../../kernel/errors";
import { parseWith } from "../http/validation";

// GraphQL arguments are camelCase; the shared zod schemas of the /v1 operations are
// snake_case. Parsing through them keeps one set of rules (lengths, enums, trimming) for both
// transports; a failing field is reported as the GraphQL field (mask-error.ts graphqlParam).

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export interface ShapeOptions {
  /**
   * Keep fields given as null: for inputs where null means something (a send policy's null
   * clears a budget), as opposed to an absent field, which keeps its value. By default null is
   * GraphQL's "not given" and dropped.
   */
  keepNull?: boolean;
}

/** Arguments as the /v1 body or query: snake_case keys (top level); null dropped unless keepNull. */
export function restShape(args: object, options: ShapeOptions = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || (value === null && !options.keepNull)) continue;
    out[snake(key)] = value;
  }
  return out;
}

export function parseArgs<S extends z.ZodType>(schema: S, args: object, options?: ShapeOptions): z.output<S> {
  return parseWith(schema, restShape(args, options));
}

/**
 * Runs a service whose errors name its own parameters (`id`, `line_ids`) where the GraphQL
 * field's argument is called otherwise (`poolId`, `lineId`): rethrows them under the
 * argument's name, so `param` names what the caller sent.
 */
export async function renamingParams<T>(names: Record<string, string>, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError && error.param !== undefined && names[error.param] !== undefined) {
      throw new ApiError(error.code, error.message, { param: names[error.param], headers: error.headers });
    }
    throw error;
  }
}
