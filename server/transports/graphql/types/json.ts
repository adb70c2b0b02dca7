import { GraphQLScalarType, valueFromASTUntyped } from "graphql";
import { builder } from "../builder";

// JSON: a free-form value (a provider's settings, what a probe found). Its shape is checked by
// the shared zod schema of the operation that takes it, as for every other argument.

const scalar = new GraphQLScalarType<unknown, unknown>({
  name: "JSON",
  description: "A JSON value (usually an object), given and returned as is.",
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

export const JSONScalar = builder.addScalarType("JSON", scalar);
