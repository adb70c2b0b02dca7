import SchemaBuilder from "@pothos/core";
import ComplexityPlugin from "@pothos/plugin-complexity";
import PrismaPlugin from "@pothos/plugin-prisma";
import RelayPlugin from "@pothos/plugin-relay";
import ScopeAuthPlugin from "@pothos/plugin-scope-auth";
import { getNullableType, type GraphQLField, GraphQLList } from "graphql";
import { requireScope } from "../../services/access/api-keys";
import type { Scope } from "../../services/access/scopes";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import type PrismaTypes from "../../generated/pothos-prisma-types";
import { getDatamodel } from "../../generated/pothos-prisma-types";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../../wire/pagination";
import type { GraphQLContext } from "./context";

// The Pothos schema builder: field scopes are checked by /v1's requireScope; pages as /v1's (50, at most 100).

/** Per-operation limits, checked before any resolver runs. */
const LIMITS = { depth: 16, breadth: 200, complexity: 20_000 } as const;

/** A field costs 1; what lies beneath it counts once per item it may return (a page size, or 10 for a list). */
function fieldComplexity(args: Record<string, unknown>, _ctx: GraphQLContext, field: GraphQLField<unknown, GraphQLContext>) {
  if (field.args.some((a) => a.name === "first")) {
    const page = args.first ?? args.last;
    return { field: 1, multiplier: typeof page === "number" ? Math.max(page, 1) : DEFAULT_LIMIT };
  }
  const type = getNullableType(field.type);
  return { field: 1, multiplier: type instanceof GraphQLList && field.name !== "edges" ? 10 : 1 };
}

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  AuthScopes: { scope: Scope };
  DefaultFieldNullability: false;
  Scalars: {
    Timestamp: { Input: number; Output: Date | number };
    /** A free-form value; the operation's own zod schema checks its shape. */
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [ScopeAuthPlugin, RelayPlugin, PrismaPlugin, ComplexityPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      scope: (scope: Scope) => {
        requireScope(ctx.actor, scope);
        return true;
      },
    }),
  },
  relay: {
    clientMutationId: "omit",
    cursorType: "String",
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
  prisma: {
    client: (ctx) => ctx.prisma,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    defaultConnectionSize: DEFAULT_LIMIT,
    maxConnectionSize: MAX_LIMIT,
    onUnusedQuery: config().isProduction ? null : "error",
  },
  complexity: {
    fieldComplexity,
    limit: LIMITS,
    complexityError: (kind, result) => {
      const measure = kind.toLowerCase() as "depth" | "breadth" | "complexity";
      return new ApiError(
        "query_too_complex",
        `This operation's ${measure} is ${result[measure]}, over the limit of ${result[`max${kind}`]}. Ask for fewer fields, smaller pages or less nesting.`,
      );
    },
  },
});

export type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
export type MutationBuilder = Parameters<Parameters<typeof builder.mutationFields>[0]>[0];

builder.scalarType("Timestamp", {
  description: "Unix time in milliseconds (UTC), as a JSON number: the same value as the REST API's *_at fields.",
  serialize: (value) => (value instanceof Date ? value.getTime() : value),
  parseValue: (value) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw new ApiError("invalid_parameter_value", "A Timestamp is a non-negative integer of Unix milliseconds.");
    }
    return value;
  },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});
