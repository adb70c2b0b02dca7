// /api/auth/* - next-auth: dashboard sign-in with email and password, sign-out, session
import NextAuth from "next-auth";
import { authOptions } from "@/server/auth/session";

type Context = { params: Promise<{ nextauth: string[] }> };

async function handler(req: Request, context: Context): Promise<Response> {
  return NextAuth(req as never, context as never, await authOptions());
}

export { handler as GET, handler as POST };
