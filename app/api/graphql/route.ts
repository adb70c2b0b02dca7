// GET, POST /api/graphql - the GraphQL API; other methods reach yoga too, for its JSON 405.
import { handleGraphQL } from "@/server/transports/graphql/yoga";
import { preflightResponse } from "@/server/transports/http/responses";

export const GET = handleGraphQL;
export const POST = handleGraphQL;
export const PUT = handleGraphQL;
export const PATCH = handleGraphQL;
export const DELETE = handleGraphQL;
export const OPTIONS = preflightResponse;
