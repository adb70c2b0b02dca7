import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  type FragmentDefinitionNode,
  GraphQLError,
  getNamedType,
  isIntrospectionType,
  Kind,
  parse,
  type SelectionSetNode,
  specifiedRules,
  validate,
  type ValidationRule,
} from "graphql";
import { ERROR_CODES } from "../../kernel/errors";
import { schema } from "./schema";

// Who may introspect (GRAPHQL_INTROSPECTION, docs/graphql.md). Introspection lies outside the
// Pothos complexity limits; graphql-js's MaxIntrospectionDepthRule (in specifiedRules) refuses
// the nestings that grow the answer exponentially.

export type IntrospectionMode = "authenticated" | "on" | "off";

const ROOT_FIELDS = new Set(["__schema", "__type", "__typename"]);

/** Refuses `__schema` and `__type` (not `__typename`), for GRAPHQL_INTROSPECTION=off. */
export const introspectionDisabledRule: ValidationRule = (context) => ({
  Field(node) {
    const type = context.getType();
    if (type && isIntrospectionType(getNamedType(type))) {
      context.reportError(
        new GraphQLError("Schema introspection is disabled on this server (GRAPHQL_INTROSPECTION=off).", {
          nodes: node,
          extensions: { code: "introspection_disabled", type: ERROR_CODES.introspection_disabled.type },
        }),
      );
      return false;
    }
    return undefined;
  },
});

/** Whether every operation of the document is a query of only __schema, __type and __typename. */
function isIntrospectionOnly(document: DocumentNode): boolean {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  const rootOnly = (set: SelectionSetNode, seen: Set<string>): boolean =>
    set.selections.every((s) => {
      if (s.kind === Kind.FIELD) return ROOT_FIELDS.has(s.name.value);
      if (s.kind === Kind.INLINE_FRAGMENT) return rootOnly(s.selectionSet, seen);
      const fragment = fragments.get(s.name.value);
      return !!fragment && !seen.has(s.name.value) && rootOnly(fragment.selectionSet, new Set(seen).add(s.name.value));
    });
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  return operations.length > 0 && operations.every((op) => op.operation === "query" && rootOnly(op.selectionSet, new Set()));
}

export interface IntrospectionParams {
  query?: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/**
 * The answer to an operation without credentials when GRAPHQL_INTROSPECTION=on and it only
 * introspects; null when it must be authenticated like any other.
 */
export async function anonymousIntrospection(params: IntrospectionParams): Promise<ExecutionResult | null> {
  if (!params.query) return null;
  let document: DocumentNode;
  try {
    document = parse(params.query);
  } catch {
    return null;
  }
  if (!isIntrospectionOnly(document)) return null;
  const errors = validate(schema, document, specifiedRules);
  // As yoga reports validation errors on the authenticated path.
  if (errors.length) return { errors: errors.map((e) => new GraphQLError(e.message, { nodes: e.nodes, extensions: { code: "GRAPHQL_VALIDATION_FAILED" } })) };
  // Introspection resolvers read only the schema: there is no caller to put in the context.
  return execute({ schema, document, operationName: params.operationName ?? undefined, variableValues: params.variables ?? undefined, contextValue: {} });
}
