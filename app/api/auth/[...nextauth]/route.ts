// /api/auth/* - next-auth: dashboard sign-in with email and password (throttled), sign-out, session
import { type AuthRouteContext, handleAuth } from "@/server/transports/auth-route";

const handler = (req: Request, context: AuthRouteContext) => handleAuth(req, context);

export { handler as GET, handler as POST };
