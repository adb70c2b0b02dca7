import type { z } from "zod";
import { ApiError } from "../../kernel/errors";
import { parseWith } from "../../wire/parse";

// GraphQL arguments (camelCase) parsed by the /v1 operations' zod schemas (snake_case): one set
// of rules for both transports; a failing field is named in GraphQL's spelling (graphqlParam).

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export interface ShapeOptions {
  /** Keep nulls where null means something (a send policy's null clears a budget); by default null is "not given". */
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

/** Rethrows a service's errors about its own parameters (`id`) under the GraphQL argument's name (`poolId`). */
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
