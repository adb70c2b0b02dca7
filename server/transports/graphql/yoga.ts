import { createYoga, type GraphQLParams, isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { enforceRateLimit } from "../http/api-rate-limit";
import { jsonBodyLimit, readText } from "../http/body";
import { CORS_HEADERS, requestIdOf } from "../http/responses";
import { parseJson } from "../http/validation";
import { annotateRequest } from "../../observability/request-context";
import { callerCheck, createContext, type GraphQLContext, graphqlActor, hasSessionCookie, type RequestScope } from "./context";
import { isHandledError, maskError, withRequestId } from "./mask-error";
import { anonymousIntrospection, type IntrospectionMode, introspectionDisabledRule } from "./introspection";
import { schema } from "./schema";
import { log } from "../../kernel/log";

// graphql-yoga over the Pothos schema. The caller and the rate limit are checked before the
// operation is parsed, so an unauthenticated client learns nothing of the schema (docs/graphql.md).

/** The body limit unless the JSON one is larger: uploadFile takes 10 MiB, 13.3 MiB of base64. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const bodyLimit = () => Math.max(MAX_BODY_BYTES, jsonBodyLimit());

/** Tokens an operation may have (about 50 times what the field limits allow a real one). */
const MAX_TOKENS = 10_000;
/** Nesting of { ( [ allowed, checked before the recursive parser. */
const MAX_DOCUMENT_DEPTH = 64;

/** Whether a GraphQL document nests deeper than `max`: one pass, outside strings and comments. */
export function documentTooDeep(source: string, max = MAX_DOCUMENT_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "#") {
      while (i < source.length && source[i] !== "\n" && source[i] !== "\r") i++;
    } else if (c === '"') {
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        i = end < 0 ? source.length : end + 2;
      } else {
        for (i++; i < source.length && source[i] !== '"' && source[i] !== "\n"; i++) if (source[i] === "\\") i++;
      }
    } else if (c === "{" || c === "(" || c === "[") {
      if (++depth > max) return true;
    } else if (c === "}" || c === ")" || c === "]") depth--;
  }
  return false;
}

const isJson = (contentType: string | null) => {
  const type = contentType?.split(";", 1)[0]!.trim().toLowerCase();
  return type === "application/json" || type === "application/graphql+json";
};

function jsonParam(text: string | null, name: string): unknown {
  return text ? parseJson(text, `The ${name} parameter`) : undefined;
}

async function requestParams(request: Request): Promise<GraphQLParams> {
  let params: Record<string, unknown>;
  if (request.method === "GET") {
    const search = new URL(request.url).searchParams;
    params = {
      query: search.get("query") ?? undefined,
      operationName: search.get("operationName") ?? undefined,
      variables: jsonParam(search.get("variables"), "variables"),
      extensions: jsonParam(search.get("extensions"), "extensions"),
    };
  } else {
    const parsed = parseJson(await readText(request, bodyLimit()));
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new ApiError("invalid_json", "The request body must be a JSON object ({ query, variables, operationName }).");
    }
    params = parsed as Record<string, unknown>;
  }
  if (typeof params.query === "string" && documentTooDeep(params.query)) {
    throw new ApiError("query_too_complex", `The operation nests deeper than ${MAX_DOCUMENT_DEPTH} levels.`);
  }
  return params as GraphQLParams;
}

type ServerContext = { scope: RequestScope };

const CSRF_HEADER = "x-graphql-yoga-csrf";
/** Content types a cross-site form or a simple fetch can send without a CORS preflight. */
const SIMPLE_CONTENT_TYPES = new Set(["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]);

/**
 * The session cookie rides along on requests other sites make, so a request authenticated by it
 * must carry the CSRF header or a content type that needs a CORS preflight (which never allows
 * credentials). API keys are not ambient and are not checked.
 */
function checkCsrf(request: Request): void {
  if (request.headers.get("authorization") || !hasSessionCookie(request) || request.headers.has(CSRF_HEADER)) return;
  const contentType = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (contentType && !SIMPLE_CONTENT_TYPES.has(contentType)) return;
  throw new ApiError(
    "csrf_header_required",
    `Requests authenticated by the session cookie must send the ${CSRF_HEADER} header or a JSON body (Content-Type: application/json).`,
  );
}

function requestPlugin(introspection: IntrospectionMode): Plugin<object, ServerContext> {
  return {
    onRequestParse({ request, setRequestParser }) {
      // Thrown here, an error is answered like any request-level error (maskError, then request_id).
      checkCsrf(request);
      if (request.method === "POST" && !isJson(request.headers.get("content-type"))) {
        throw new ApiError("unsupported_media_type", "GraphQL requests are POSTed as application/json (or sent by GET).");
      }
      if (request.method === "GET" || request.method === "POST") setRequestParser(requestParams);
    },
    onParse({ parseFn, setParseFn }) {
      setParseFn((source, options) => parseFn(source, { ...options, maxTokens: MAX_TOKENS }));
    },
    async onParams({ request, params, context, setResult }) {
      try {
        if (introspection === "on" && !request.headers.get("authorization") && !hasSessionCookie(request)) {
          const answer = await anonymousIntrospection(params);
          if (answer) return setResult(answer);
        }
        const actor = await graphqlActor(request);
        annotateRequest(context.scope.requestId, actor);
        Object.assign(context.scope.headers, await enforceRateLimit(actor));
        context.scope.actor = actor;
        context.scope.recheckCaller = callerCheck(request, actor);
      } catch (err) {
        setResult({ errors: [maskError(err)] });
      }
    },
    onResultProcess({ result, setResult, serverContext }) {
      const { requestId } = serverContext.scope;
      // A subscription whose source fails (its key was revoked, say) ends with that error as its
      // last event, rather than a broken stream.
      if (isAsyncIterable(result)) {
        setResult(
          mapAsyncIterator(
            result,
            (r) => withRequestId(r, requestId),
            (err: unknown) => withRequestId({ errors: [maskError(err)] }, requestId),
          ),
        );
      } else if (!Array.isArray(result)) setResult(withRequestId(result, requestId));
    },
  };
}

const introspectionOff: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule(introspectionDisabledRule);
  },
};

function createServer() {
  const { isProduction: production, GRAPHQL_INTROSPECTION: introspection } = config();
  return createYoga<ServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: "/api/graphql",
    context: ({ scope }) => createContext(scope),
    maskedErrors: { maskError },
    graphiql: !production && { title: "Relay GraphQL", headers: JSON.stringify({ Authorization: "Bearer sk_live_..." }) },
    landingPage: false,
    batching: false,
    multipart: false,
    maxRequestBodySize: false, // requestParams reads the body with its own limit
    cors: false, // the /v1 CORS headers are added below, for every response
    logging: {
      debug: () => undefined,
      info: () => undefined,
      warn: (...args: unknown[]) => log().warn({ detail: args.map(String) }, "graphql"),
      error: (...args: unknown[]) => {
        if (!args.some(isHandledError)) log().error({ err: args.find((a) => a instanceof Error), detail: args.filter((a) => !(a instanceof Error)).map(String) }, "graphql error");
      },
    },
    plugins: [requestPlugin(introspection), ...(introspection === "off" ? [introspectionOff] : [])],
  });
}

let server: ReturnType<typeof createServer> | undefined;

export async function handleGraphQL(request: Request): Promise<Response> {
  server ??= createServer();
  const scope: RequestScope = { requestId: requestIdOf(request.headers), actor: null, headers: {}, recheckCaller: async () => undefined };
  const response = await server.handleRequest(request, { scope });
  for (const [name, value] of Object.entries({ ...CORS_HEADERS, ...scope.headers, "Request-Id": scope.requestId })) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  return response;
}
