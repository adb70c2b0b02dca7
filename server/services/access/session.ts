import type { AuthOptions } from "next-auth";
import { getServerSession } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { safeCallbackPath } from "../../../lib/safe-callback";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { instanceSecret } from "../../db/secrets";
import { verifyCredentials } from "../accounts/accounts";
import type { Actor } from "./actor";
import { SCOPES } from "./scopes";

// The JWT's signing secret is NEXTAUTH_SECRET, or an instance secret kept in the database so `npm run dev` needs none.

declare module "next-auth" {
  interface Session {
    user: { id: string; email: string; accountId: string };
  }
}
declare module "next-auth/jwt" {
  interface JWT {
    userId?: string;
    accountId?: string;
  }
}

const SESSION_MAX_AGE_S = 30 * 24 * 3600;
let options: Promise<AuthOptions> | undefined;

export function authOptions(): Promise<AuthOptions> {
  options ??= (async () => {
    const c = config();
    // next-auth builds its callback URLs from NEXTAUTH_URL.
    process.env.NEXTAUTH_URL ??= c.PUBLIC_URL;
    return {
      secret: process.env.NEXTAUTH_SECRET || (await instanceSecret("session_secret")),
      session: { strategy: "jwt", maxAge: SESSION_MAX_AGE_S },
      pages: { signIn: "/sign-in" },
      providers: [
        CredentialsProvider({
          name: "Email and password",
          credentials: { email: { label: "Email", type: "email" }, password: { label: "Password", type: "password" } },
          async authorize(credentials) {
            if (!credentials?.email || !credentials.password) return null;
            const found = await verifyCredentials(credentials.email, credentials.password);
            return found ? { id: found.userId, email: found.email, accountId: found.accountId } : null;
          },
        }),
      ],
      callbacks: {
        // next-auth's default keeps `${baseUrl}//evil.example`-style URLs; allow same-origin paths only.
        redirect({ url, baseUrl }) {
          return new URL(safeCallbackPath(url, baseUrl), baseUrl).href;
        },
        jwt({ token, user }) {
          if (user) {
            token.userId = user.id;
            token.accountId = (user as { accountId?: string }).accountId;
          }
          return token;
        },
        session({ session, token }) {
          session.user = { id: token.userId ?? "", email: token.email ?? "", accountId: token.accountId ?? "" };
          return session;
        },
      },
    } satisfies AuthOptions;
  })().catch((err: unknown) => {
    options = undefined;
    throw err;
  });
  return options;
}

/** The account must still exist and still be owned by the session's user. */
export async function sessionActor(): Promise<Actor | null> {
  const session = await getServerSession(await authOptions());
  const accountId = session?.user?.accountId;
  if (!accountId) return null;
  const db = await getDb();
  const account = await db.account.findFirst({ where: { id: accountId, ownerId: session.user.id }, select: { id: true } });
  if (!account) return null;
  return { ...sessionActorFor(account.id), userId: session.user.id };
}

export function sessionActorFor(accountId: string): Actor {
  return {
    accountId,
    keyId: null,
    scopes: new Set(SCOPES),
    lineIds: null,
    rateLimitPerHour: config().RATE_LIMIT_PER_HOUR,
    hasOwner: true,
    guardrails: null,
  };
}
