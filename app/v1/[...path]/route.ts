// Any other /v1 path: a JSON 404 in the error envelope (and CORS preflight).
import { routes } from "@/server/http/api-route";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({});
