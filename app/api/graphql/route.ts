// GET, POST /api/graphql - the GraphQL API (server/transports/graphql); subscriptions over server-sent events.
// Other methods reach yoga too, which answers them 405 with a JSON error (not Next's empty 405).
import { handleGraphQL } from "@/server/transports/graphql/yoga";
import { preflightResponse } from "@/server/transports/http/responses";

export const GET = handleGraphQL;
export const POST = handleGraphQL;
export const PUT = handleGraphQL;
export const PATCH = handleGraphQL;
export const DELETE = handleGraphQL;
export const OPTIONS = preflightResponse;
