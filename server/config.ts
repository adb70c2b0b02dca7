import path from "node:path";
import { z } from "zod";

// Environment, parsed once with clear errors. Every variable is documented in README.md.

const bool = z
  .enum(["true", "false", "1", "0", ""])
  .transform((v) => v === "true" || v === "1");

const EnvSchema = z.object({
  NODE_ENV: z.string().default("development"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** PostgreSQL schema to use (default public); tests give each file its own. */
  DATABASE_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, "must be a lowercase SQL identifier")
    .default("public"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Embedded database and file storage; ":memory:" keeps everything in memory (tests). */
  DATA_DIR: z.string().default("./data"),
  /** Base URL used in links the API hands out (file downloads). */
  PUBLIC_URL: z.string().url().default(`http://localhost:${process.env.PORT ?? 3000}`),
  /**
   * Optional separate origin for file downloads (e.g. https://files.example.com): signed links
   * use it, and the download route then serves only requests addressed to its host, so
   * uploads never render on the dashboard's origin.
   */
  FILES_PUBLIC_URL: z
    .string()
    .url()
    .regex(/^https?:\/\//, "must be an http:// or https:// URL")
    .transform((u) => u.replace(/\/+$/, ""))
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** Largest JSON request body (/v1, tRPC, sign-in); larger ones answer 413 request_too_large unread. */
  MAX_JSON_BODY_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(1024 * 1024),
  RATE_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(10_000),
  SANDBOX_LINE_HANDLE: z.string().min(3).default("+15555550100"),
  SANDBOX_DAILY_LIMIT: z.coerce.number().int().min(1).default(50),
  /** Seconds a verified API key stays cached; revocations take effect within this time. */
  API_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(60).default(5),
  /** Run embedded PGlite on its own thread (default), so queries do not take the event loop's time. */
  PGLITE_THREAD: bool.default(true),
  /** Open long-lived streams (GET /v1/listen, GraphQL subscriptions) per API key, per instance. */
  MAX_STREAMS_PER_KEY: z.coerce.number().int().min(1).max(10_000).default(10),
  /** Open long-lived streams per account (all its keys and dashboard sessions), per instance. */
  MAX_STREAMS_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(50),
  EMBEDDED_SEED: bool.optional(),
  /**
   * Behind a reverse proxy that sets X-Forwarded-For: take the client's address from its first
   * hop (for the sign-in and sign-up limits). Off, the header is ignored (a client could forge
   * it) and every client shares one per-address budget.
   */
  TRUST_PROXY: bool.default(false),
  /** Who may introspect the GraphQL schema: callers with a key or session, everyone, or nobody. */
  GRAPHQL_INTROSPECTION: z.enum(["authenticated", "on", "off"]).default("authenticated"),
  /** The ffmpeg binary that converts audio messages; ffprobe is expected next to it. */
  FFMPEG_PATH: z.string().trim().min(1).default("ffmpeg"),
  /**
   * Inngest delivery engine: set INNGEST_EVENT_KEY (with INNGEST_SIGNING_KEY and
   * INNGEST_BASE_URL for a self-hosted server) or INNGEST_DEV=1 (a dev server). Unset: the
   * embedded runner delivers. The Inngest SDK reads these variables too.
   */
  INNGEST_EVENT_KEY: z.string().trim().optional(),
  INNGEST_SIGNING_KEY: z.string().trim().optional(),
  INNGEST_BASE_URL: z.string().url().optional().or(z.literal("").transform(() => undefined)),
  /** Allow http:// and private/loopback webhook URLs (default: on only in development and test). */
  WEBHOOK_ALLOW_INSECURE: bool.optional(),
  /** The simulated other phone at /api/simulator/* (default: on only in development and test). */
  SIMULATOR_ENABLED: bool.optional(),
  /** "1"/"true" for an Inngest dev server (no signatures), "0" for a self-hosted or cloud server; or the dev server's URL. */
  INNGEST_DEV: z.string().trim().optional(),
  /**
   * Encrypts provider credentials at rest (any string of 32+ characters). Unset: one is generated
   * once into DATA_DIR/credentials.key; several instances must share one, so set it in production.
   */
  CREDENTIALS_KEY: z
    .string()
    .min(32, "must be at least 32 characters (e.g. openssl rand -base64 32)")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** How long a provider line's send may wait for the provider to come back before it fails. */
  PROVIDER_SEND_WINDOW_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(3_600),
  /** Seconds between capability and health probes of each provider line. */
  PROVIDER_PROBE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(60),
  /** Largest inbound attachment downloaded from a provider, in bytes. */
  PROVIDER_MAX_ATTACHMENT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(100 * 1024 * 1024),
  /** pino level of the JSON log (one line per request, plus delivery and webhook outcomes). */
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /**
   * When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`; unset, it is open
   * (keep it behind the proxy then).
   */
  METRICS_TOKEN: z
    .string()
    .regex(/^[A-Za-z0-9._~+/=-]{16,256}$/, "must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = - (a bearer token)")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** On SIGTERM, how long in-flight sends, webhook attempts and requests may still finish. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(600).default(25),
  /** Serves /api/bench/echo, the trivial route npm run bench measures /v1 against. */
  BENCH_ECHO: bool.optional(),
});

export type Config = z.infer<typeof EnvSchema> & {
  dataDir: string | null;
  /** Which engine delivers the outbox: the embedded runner, or Inngest functions. */
  deliveryEngine: "embedded" | "inngest";
  webhookAllowInsecure: boolean;
  simulatorEnabled: boolean;
  /**
   * Production-like: any NODE_ENV but development and test (staging, preview, a typo), so a
   * deployment gets the secure defaults unless it says otherwise: no insecure webhook URLs,
   * GraphiQL or introspection, development seed account, or simulator.
   */
  isProduction: boolean;
  isTest: boolean;
};

/** Parses an environment (process.env, or a literal one in tests). */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = EnvSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid environment configuration:\n${lines.join("\n")}`);
  }
  const c = result.data;
  const isProduction = c.NODE_ENV !== "development" && c.NODE_ENV !== "test";
  return {
    ...c,
    dataDir: c.DATA_DIR === ":memory:" ? null : path.resolve(c.DATA_DIR),
    deliveryEngine: c.INNGEST_EVENT_KEY || (c.INNGEST_DEV && !["0", "false"].includes(c.INNGEST_DEV.toLowerCase())) ? "inngest" : "embedded",
    webhookAllowInsecure: c.WEBHOOK_ALLOW_INSECURE ?? !isProduction,
    simulatorEnabled: c.SIMULATOR_ENABLED ?? !isProduction,
    isProduction,
    isTest: c.NODE_ENV === "test",
  };
}

let cached: Config | undefined;

export function config(): Config {
  cached ??= parseConfig(process.env);
  return cached;
}

/** For tests and scripts that change the environment after import. */
export function resetConfig(): void {
  cached = undefined;
}
