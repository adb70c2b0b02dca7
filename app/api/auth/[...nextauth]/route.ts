// /api/auth/* - next-auth: dashboard sign-in with email and password, sign-out, session
import NextAuth from "next-auth";
import { NextRequest } from "next/server";
import { authOptions } from "@/server/auth/session";
import { boundedRequest, jsonBodyLimit } from "@/server/http/body";
import { errorResponse, newRequestId } from "@/server/http/responses";

type Context = { params: Promise<{ nextauth: string[] }> };

async function handler(req: Request, context: Context): Promise<Response> {
  let request: Request;
  try {
    // next-auth would buffer a body of any size before looking at it.
    request = await boundedRequest(req, jsonBodyLimit());
  } catch (err) {
    return errorResponse(err, newRequestId());
  }
  return NextAuth((request === req ? req : new NextRequest(request)) as never, context as never, await authOptions());
}

export { handler as GET, handler as POST };
