// GET, POST /api/graphql - the GraphQL API (server/graphql); subscriptions over server-sent events
import { handleGraphQL } from "@/server/graphql/yoga";
import { preflightResponse } from "@/server/http/responses";

export const GET = handleGraphQL;
export const POST = handleGraphQL;
export const OPTIONS = preflightResponse;
