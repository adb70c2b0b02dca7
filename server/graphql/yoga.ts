import { NoSchemaIntrospectionCustomRule } from "graphql";
import { createYoga, isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import { config } from "../config";
import { ApiError } from "../errors";
import { enforceRateLimit } from "../http/api-rate-limit";
import { bodyChunks } from "../http/body";
import { CORS_HEADERS, newRequestId } from "../http/responses";
import { callerCheck, createContext, type GraphQLContext, graphqlActor, type RequestScope } from "./context";
import { isHandledError, maskError, withRequestId } from "./errors";
import { schema } from "./schema";

// graphql-yoga over the Pothos schema. Per request, in /v1's order: a request ID, then the
// caller (authentication) and the rate limit before the operation is even parsed, so an
// unauthenticated client learns nothing about the schema. Outside production, GraphiQL is
// served on GET and introspection is allowed.

/** Request bodies above this are refused before parsing (uploadFile takes at most 10 MiB, base64). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

type ServerContext = { scope: RequestScope };

const bodyTooLarge = () =>
  new ApiError("file_too_large", `GraphQL requests may be at most ${MAX_BODY_BYTES} bytes; upload large files with POST /v1/files.`);

const requestPlugin: Plugin<object, ServerContext> = {
  onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
    // Thrown here, it is answered like any request-level error (maskError, then request_id).
    if (Number(request.headers.get("content-length") ?? "0") > MAX_BODY_BYTES) throw bodyTooLarge();
    // A body without Content-Length (chunked) is read up to the limit and no further.
    if (requestParser && request.body && !request.headers.has("content-length")) {
      setRequestParser(async (req) => {
        const chunks: Uint8Array[] = [];
        for await (const chunk of bodyChunks(req, MAX_BODY_BYTES, bodyTooLarge)) chunks.push(chunk);
        const headers = new fetchAPI.Headers(req.headers);
        headers.delete("transfer-encoding");
        return requestParser(new fetchAPI.Request(req.url, { method: req.method, headers, body: Buffer.concat(chunks) }));
      });
    }
  },
  async onParams({ request, context, setResult }) {
    try {
      const actor = await graphqlActor(request);
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

const noIntrospection: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule(NoSchemaIntrospectionCustomRule);
  },
};

function createServer() {
  const production = config().isProduction;
  return createYoga<ServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: "/api/graphql",
    context: ({ scope }) => createContext(scope),
    maskedErrors: { maskError },
    graphiql: !production && { title: "Relay GraphQL", headers: JSON.stringify({ Authorization: "Bearer sk_live_..." }) },
    landingPage: false,
    batching: false,
    cors: false, // the /v1 CORS headers are added below, for every response
    logging: {
      debug: () => undefined,
      info: () => undefined,
      warn: (...args: unknown[]) => console.warn("[graphql]", ...args),
      error: (...args: unknown[]) => {
        if (!args.some(isHandledError)) console.error("[graphql]", ...args);
      },
    },
    plugins: [requestPlugin, ...(production ? [noIntrospection] : [])],
  });
}

let server: ReturnType<typeof createServer> | undefined;

/** The route handler of /api/graphql (GET and POST). */
export async function handleGraphQL(request: Request): Promise<Response> {
  server ??= createServer();
  const scope: RequestScope = { requestId: newRequestId(), actor: null, headers: {}, recheckCaller: async () => undefined };
  const response = await server.handleRequest(request, { scope });
  for (const [name, value] of Object.entries({ ...CORS_HEADERS, ...scope.headers, "Request-Id": scope.requestId })) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  return response;
}
