import NextAuth from "next-auth";
import { NextRequest } from "next/server";
import { config } from "../kernel/config";
import { databaseUnavailableError } from "../db/database-failures";
import { ApiError } from "../kernel/errors";
import { boundedRequest, jsonBodyLimit } from "./http/body";
import { clientIp } from "./http/client-ip";
import { errorResponse, requestIdOf } from "./http/responses";
import { throttleAuthAttempt } from "../services/access/auth-throttle";
import { authOptions } from "../services/access/session";

// /api/auth/*: next-auth, with sign-in attempts (POST callback/credentials) counted per client
// address and per email before next-auth verifies a password. A refused attempt answers 429
// with the API's error envelope plus the `url` next-auth's signIn() reads its error from.

export type AuthRouteContext = { params: Promise<{ nextauth: string[] }> };
type Handler = (req: Request, context: AuthRouteContext) => Promise<Response>;

const nextAuth: Handler = async (req, context) => NextAuth(req as never, context as never, await authOptions());

export async function handleAuth(original: Request, context: AuthRouteContext, inner: Handler = nextAuth): Promise<Response> {
  try {
    return await authenticated(original, context, inner);
  } catch (err) {
    // The database is down or overloaded (next-auth's secret and the users live there): 503
    // with the envelope, never a sign-in failure or a bare 500.
    const requestId = requestIdOf(original.headers);
    const unavailable = databaseUnavailableError(err, requestId);
    if (unavailable) return errorResponse(unavailable, requestId);
    throw err;
  }
}

async function authenticated(original: Request, context: AuthRouteContext, inner: Handler): Promise<Response> {
  let req: Request;
  try {
    // next-auth would buffer a body of any size before looking at it.
    const bounded = await boundedRequest(original, jsonBodyLimit());
    req = bounded === original ? original : new NextRequest(bounded);
  } catch (err) {
    return errorResponse(err, requestIdOf(original.headers));
  }
  // The segments next-auth itself dispatches on: a credentials sign-in is POST callback/credentials.
  const [action, provider] = (await context.params).nextauth;
  if (req.method === "POST" && action === "callback" && provider === "credentials") {
    const form = await req
      .clone()
      .formData()
      .catch(() => null);
    const email = form?.get("email");
    try {
      await throttleAuthAttempt("sign_in", { ip: clientIp(req.headers), email: typeof email === "string" ? email : null });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const requestId = requestIdOf(original.headers);
      const signInUrl = new URL("/sign-in", config().PUBLIC_URL);
      signInUrl.searchParams.set("error", err.code);
      const body = { url: signInUrl.href, error: { type: err.type, code: err.code, message: err.message }, request_id: requestId };
      return new Response(JSON.stringify(body), {
        status: err.status,
        headers: { "Content-Type": "application/json; charset=utf-8", "Request-Id": requestId, ...err.headers },
      });
    }
  }
  return inner(req, context);
}
