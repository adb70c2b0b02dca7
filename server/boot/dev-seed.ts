import { randomBytes } from "node:crypto";
import { createApiKey } from "../services/access/api-keys";
import { SCOPES } from "../services/access/scopes";
import { createAccount } from "../services/accounts/accounts";
import { createLine } from "../services/lines/lines";

// A first development account so `npm run dev` is usable at once; also the tests' standard fixture.

export async function seedDevAccount(options: { email?: string; lineHandle?: string } = {}) {
  const email = options.email ?? "dev@example.com";
  const password = randomBytes(9).toString("base64url");
  const lineHandle = options.lineHandle ?? "+15550001000";
  const account = await createAccount({ email, password });
  const line = await createLine({ accountId: account.id, handle: lineHandle, label: "Development line", advancedFeatures: true });
  const { secret } = await createApiKey({ accountId: account.id, name: "Development key", scopes: [...SCOPES] });
  return { account, line, email, password, lineHandle, key: secret };
}
