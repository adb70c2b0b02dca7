// The operator CLI's configuration is the server's: the environment, then the .env files Next loads (none overriding a set
// variable), and production defaults unless NODE_ENV=development: unset, the service's own default is development
// (loopback provider URLs allowed), which a production server then refuses. admin.ts imports this first.
// A CommonJS bundle whose named exports Node cannot detect: taken from its default export.
import nextEnv from "@next/env";

const development = process.env.NODE_ENV === "development";
const { loadedEnvFiles } = nextEnv.loadEnvConfig(process.cwd(), development, {
  info: () => {},
  error: (...args: unknown[]) => console.error(...args),
});
// (Next's types make NODE_ENV read-only.)
if (!process.env.NODE_ENV) Object.assign(process.env, { NODE_ENV: "production" });

export const ENV_FILES = loadedEnvFiles.map((f) => f.path);
