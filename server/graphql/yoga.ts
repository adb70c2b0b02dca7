import { createYoga, isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import { config } from "../config";
import { ApiError } from "../errors";
import { enforceRateLimit } from "../http/api-rate-limit";
import { bodyChunks } from "../http/body";
import { CORS_HEADERS, newRequestId } from "../http/responses";
import { callerCheck, createContext, type GraphQLContext, graphqlActor, hasSessionCookie, type RequestScope } from "./context";
import { isHandledError, maskError, withRequestId } from "./errors";
import { anonymousIntrospection, type IntrospectionMode, introspectionDisabledRule } from "./introspection";
import { schema } from "./schema";

// graphql-yoga over the Pothos schema. Per request, in /v1's order: a request ID, then the
// caller (authentication) and the rate limit before the operation is even parsed, so an
// unauthenticated client learns nothing about the schema (unless GRAPHQL_INTROSPECTION=on lets
// it introspect). Outside production, GraphiQL is served on GET.

/** Request bodies above this are refused before parsing (uploadFile takes at most 10 MiB, base64). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

type ServerContext = { scope: RequestScope };

const bodyTooLarge = () =>
  new ApiError("file_too_large", `GraphQL requests may be at most ${MAX_BODY_BYTES} bytes; upload large files with POST /v1/files.`);

/** The header a cookie-authenticated request may carry to pass the CSRF check (graphql-yoga's name). */
export const CSRF_HEADER = "x-graphql-yoga-csrf";
/** Content types a cross-site form or a simple fetch can send without a CORS preflight. */
const SIMPLE_CONTENT_TYPES = new Set(["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]);

/**
 * The signed-in session cookie rides along on requests another site makes (a link, a form on a
 * sibling subdomain), so a request authenticated by it must be one no other site can make:
 * with the CSRF header, or a content type that needs a CORS preflight (which never allows
 * credentials). Requests with an API key carry no ambient credentials and are not checked.
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
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      // Thrown here, it is answered like any request-level error (maskError, then request_id).
      checkCsrf(request);
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
    async onParams({ request, params, context, setResult }) {
      try {
        if (introspection === "on" && !request.headers.get("authorization") && !hasSessionCookie(request)) {
          const answer = await anonymousIntrospection(params);
          if (answer) return setResult(answer);
        }
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
    cors: false, // the /v1 CORS headers are added below, for every response
    logging: {
      debug: () => undefined,
      info: () => undefined,
      warn: (...args: unknown[]) => console.warn("[graphql]", ...args),
      error: (...args: unknown[]) => {
        if (!args.some(isHandledError)) console.error("[graphql]", ...args);
      },
    },
    plugins: [requestPlugin(introspection), ...(introspection === "off" ? [introspectionOff] : [])],
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
