// /api/trpc/* - the dashboard's tRPC API, authenticated by the next-auth session
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";

const handler = (req: Request) => handleTrpc(req);

export { handler as GET, handler as POST };
