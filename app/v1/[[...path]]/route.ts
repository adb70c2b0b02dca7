// Every /v1 operation (declared in server/services/*/…-operations.ts), dispatched by path; bare
// /v1 and unknown paths answer a JSON 404 in the error envelope.
import { V1_HANDLERS } from "@/server/transports/http/v1-routes";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = V1_HANDLERS;
