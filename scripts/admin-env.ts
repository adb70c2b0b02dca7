// The operator CLI's configuration is the server's: the environment, then the .env files Next
// loads for the server from the same folder (@next/env: .env.production.local, .env.local,
// .env.production, .env; the development ones under NODE_ENV=development), none overriding a
// variable already set. And the production defaults, as `npm start` has them, unless
// NODE_ENV=development says otherwise: with NODE_ENV unset the service's own default is
// development (loopback provider URLs allowed), which a production server then refuses.
// admin.ts imports this first, before any module reads the environment.
// A CommonJS bundle whose named exports Node cannot detect: taken from its default export.
import nextEnv from "@next/env";

const development = process.env.NODE_ENV === "development";
const { loadedEnvFiles } = nextEnv.loadEnvConfig(process.cwd(), development, {
  info: () => {},
  error: (...args: unknown[]) => console.error(...args),
});
// (Next's types make NODE_ENV read-only.)
if (!process.env.NODE_ENV) Object.assign(process.env, { NODE_ENV: "production" });

/** The .env files read, as named in the folder (for the line that says where the CLI's settings came from). */
export const ENV_FILES = loadedEnvFiles.map((f) => f.path);
