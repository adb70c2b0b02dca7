import type { Config } from "../kernel/config";
import { maskedPostgresUrl, postgresLocation } from "./server-info";

// The ready banner. Its operator CLI commands carry the variables the CLI needs to work on this
// server's data (secrets masked): the CLI reads the folder's .env files, not this process's environment.

interface DevSeed {
  key: string;
  email: string;
  password: string;
  lineHandle: string;
}

function cliVariables(c: Config, env: Record<string, string | undefined>): { prefix: string; masked: boolean } {
  const vars: string[] = [];
  let masked = false;
  // The CLI applies the production defaults unless told otherwise.
  if (c.NODE_ENV === "development") vars.push("NODE_ENV=development");
  if (c.DATABASE_URL) {
    const shown = maskedPostgresUrl(c.DATABASE_URL);
    masked ||= shown !== c.DATABASE_URL;
    vars.push(`DATABASE_URL='${shown}'`);
  }
  if (env.DATABASE_SCHEMA) vars.push(`DATABASE_SCHEMA=${c.DATABASE_SCHEMA}`);
  if (env.DATA_DIR) vars.push(`DATA_DIR=${c.dataDir ?? ":memory:"}`);
  if (c.CREDENTIALS_KEY) {
    vars.push("CREDENTIALS_KEY=****");
    masked = true;
  }
  for (const name of ["PROVIDER_ALLOW_PRIVATE", "MAX_LINES_PER_ACCOUNT"] as const) {
    if (env[name]) vars.push(`${name}=${c[name]}`);
  }
  return { prefix: vars.length ? `${vars.join(" ")} ` : "", masked };
}

export function readyBanner(c: Config, env: Record<string, string | undefined>, seed: DevSeed | null): string {
  const where = c.DATABASE_URL ? `PostgreSQL at ${postgresLocation(c.DATABASE_URL, c.DATABASE_SCHEMA)}` : `embedded PGlite in ${c.dataDir ?? "memory"}`;
  const engine = c.deliveryEngine === "inngest" ? `Inngest (functions served at ${c.PUBLIC_URL}/api/inngest)` : "embedded runner";
  const lines = [`Relay is ready on ${c.PUBLIC_URL} (database: ${where}; delivery: ${engine}).`];
  if (seed) {
    lines.push(
      "",
      "First start: created a development account with a simulated line. Your API key (shown once):",
      `  ${seed.key}`,
      `  account ${seed.email}, password ${seed.password}, line ${seed.lineHandle}`,
      "",
      "Try it:",
      `  curl -H "Authorization: Bearer ${seed.key}" ${c.PUBLIC_URL}/v1/lines`,
      `  curl -X POST -H "Authorization: Bearer ${seed.key}" -H "Content-Type: application/json" \\`,
      `    -d '{"line":"${seed.lineHandle}","from":"+15551230001","text":"Hello!"}' ${c.PUBLIC_URL}/api/simulator/messages`,
    );
    return lines.join("\n");
  }
  const { prefix, masked } = cliVariables(c, env);
  const admin = `  ${prefix}npm run -s admin --`;
  lines.push(
    "",
    "Create an account, a line and a key with the operator CLI, run in this folder as this user:",
    `${admin} account create --email you@example.com --password 'a long password'`,
    c.isProduction
      ? `${admin} line create --account you@example.com --handle +15551234567 --provider bluebubbles --provider-config-file bluebubbles.json`
      : `${admin} line create --account you@example.com --handle +15550001000 --advanced`,
    `${admin} key create --account you@example.com --name ${c.isProduction ? "prod" : "dev"}`,
  );
  if (c.isProduction) lines.push("A line sends through a provider (BlueBubbles, SMS Gateway, Twilio): their settings are in docs/providers.md.");
  if (masked) lines.push("**** stands for this server's secret: give the CLI the same value, or keep the settings in .env here, which the server and the CLI both read.");
  return lines.join("\n");
}
