import { GraphQLScalarType, valueFromASTUntyped } from "graphql";
import { builder, type BuilderTypes } from "../builder";

// JSON: a free-form value (a provider's settings, what a probe found). Its shape is checked by
// the shared zod schema of the operation that takes it, as for every other argument.

const scalar = new GraphQLScalarType<unknown, unknown>({
  name: "JSON",
  description: "A JSON value (usually an object), given and returned as is.",
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

// The builder's Scalars map (builder.ts) does not list JSON, so its name is not accepted by
// addScalarType's typing: the ref is typed here instead (input and output: unknown JSON).
type AddScalar = (name: string, scalar: GraphQLScalarType) => PothosSchemaTypes.ScalarRef<BuilderTypes, unknown, unknown>;
export const JSONScalar = (builder.addScalarType as unknown as AddScalar).call(builder, "JSON", scalar);
