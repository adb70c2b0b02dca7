import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

// Environment, parsed once with clear errors. Every variable is documented in docs/configuration.md.

const bool = z
  .enum(["true", "false", "1", "0", ""])
  .transform((v) => v === "true" || v === "1");

/** Where file bytes are kept (Config.storage). */
export type StorageLocation =
  | { kind: "local"; root: string }
  | { kind: "memory" }
  | { kind: "s3"; bucket: string; endpoint: string | undefined; region: string; pathStyle: boolean };

// S3's bucket naming rules: 3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit
// at each end, no "..", not an IP address.
const S3_BUCKET = /^(?!\d{1,3}(\.\d{1,3}){3}$)(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const S3_PARAMS = ["endpoint", "region", "path_style"];

const StorageUrl = z.string().transform((value, ctx) => {
  const fail = (message: string) => {
    ctx.addIssue({ code: "custom", message });
    return z.NEVER;
  };
  if (!value.trim()) return undefined;
  const url = URL.canParse(value) ? new URL(value) : null;
  if (url?.protocol === "file:" && !url.host && !url.search && !url.hash && url.pathname !== "/") {
    return { kind: "local" as const, root: fileURLToPath(url) };
  }
  if (url?.protocol !== "s3:") return fail("must be s3://<bucket>?region=<region>&endpoint=<url>&path_style=true, or file:///absolute/path");
  if (url.username || url.password || url.port || (url.pathname && url.pathname !== "/") || url.hash) {
    return fail("must be s3://<bucket>?<parameters> with nothing else: credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a server from ?endpoint=");
  }
  if (!S3_BUCKET.test(url.hostname)) {
    return fail(url.hostname ? `"${url.hostname}" is not a valid S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)` : "names no bucket (s3://<bucket>)");
  }
  const params = new Map<string, string>();
  for (const [name, v] of url.searchParams) {
    if (!S3_PARAMS.includes(name)) return fail(`unknown parameter "${name}" (expected ${S3_PARAMS.join(", ")})`);
    if (params.has(name)) return fail(`parameter "${name}" is given twice`);
    params.set(name, v);
  }
  const endpoint = params.get("endpoint");
  const endpointUrl = endpoint !== undefined && URL.canParse(endpoint) ? new URL(endpoint) : null;
  if (endpoint !== undefined && (!endpointUrl || !/^https?:$/.test(endpointUrl.protocol) || endpointUrl.username || endpointUrl.search || endpointUrl.hash)) {
    return fail("endpoint must be an http:// or https:// URL (e.g. http://minio:9000)");
  }
  const region = params.get("region");
  if (region !== undefined && !/^[a-z0-9-]{1,64}$/.test(region)) return fail("region must be a region name such as eu-west-1");
  const pathStyle = params.get("path_style") ?? "false";
  if (pathStyle !== "true" && pathStyle !== "false") return fail("path_style must be true or false");
  return { kind: "s3" as const, bucket: url.hostname, endpoint: endpointUrl?.href.replace(/\/+$/, ""), region, pathStyle: pathStyle === "true" };
});

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
  /**
   * Seconds of nothing but failing database queries after which GET /healthz answers 503, so an
   * orchestrator restarts the process (0: never).
   */
  DATABASE_FAILURE_EXIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  /** Embedded database and file storage; ":memory:" keeps everything in memory (tests). */
  DATA_DIR: z.string().default("./data"),
  /**
   * Where file bytes are kept. Unset: DATA_DIR/files. s3://<bucket>?region=&endpoint=&path_style=true:
   * an S3 bucket (endpoint and path_style for S3-compatible servers such as MinIO), credentials from
   * the AWS SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ...). file:///path: that directory.
   */
  STORAGE_URL: StorageUrl.optional(),
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
   * How many reverse proxies in front of the service append to X-Forwarded-For: the client's
   * address (for the sign-in and sign-up limits) is the entry that many hops from the right
   * (what the proxies wrote; entries to its left are the client's own and may be forged).
   * 0 (default): the header is ignored and the address is the connection's.
   */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(16).optional(),
  /** Older spelling: true is TRUST_PROXY_HOPS=1 (one proxy). */
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
  /** How long one line's probe and catch-up may take in the line monitor before it moves on (the line is then degraded). */
  PROVIDER_CHECK_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  /** How many lines' probes and catch-ups one process runs at once. */
  PROVIDER_CHECK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(8),
  /** Lines one account may have (creating one more answers 403 line_limit_reached). */
  MAX_LINES_PER_ACCOUNT: z.coerce.number().int().min(1).max(1_000_000).default(100),
  /**
   * Let provider URLs (BlueBubbles, SMS Gateway, Twilio's base URL and media) reach loopback,
   * private, link-local and this machine's own addresses: needed for a Mac or phone on the LAN.
   * Off (the default outside development), they are refused, so a line's settings cannot make
   * the service fetch from its own network.
   */
  PROVIDER_ALLOW_PRIVATE: bool.optional(),
  /**
   * For test doubles of Twilio (a fake on loopback as the line's base URL): media on the base
   * URL's own origin may be fetched as Twilio's. Off by default and always off in production:
   * the base URL is the owner's choice, so it would let a signed webhook read back any internal
   * HTTP service as an attachment. PROVIDER_ALLOW_PRIVATE (a Mac on the LAN) does not imply it.
   */
  PROVIDER_MEDIA_FROM_BASE_URL: bool.optional(),
  /** Provider media downloads running at once in one process (each streams to storage). */
  PROVIDER_DOWNLOADS_PER_PROCESS: z.coerce.number().int().min(1).max(256).default(8),
  /** Provider media downloads running at once for one line. */
  PROVIDER_DOWNLOADS_PER_LINE: z.coerce.number().int().min(1).max(64).default(2),
  /** Largest inbound attachment downloaded from a provider, in bytes. */
  PROVIDER_MAX_ATTACHMENT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(100 * 1024 * 1024),
  /**
   * Stored files one account may have, in MB (uploads and received media together): past it,
   * media received from a provider is not stored (the message is, with a note) and the line
   * shows a warning.
   */
  ACCOUNT_STORAGE_QUOTA_MB: z.coerce.number().int().min(1).max(1_000_000_000).default(5000),
  /** pino level of the JSON log (one line per request, plus delivery and webhook outcomes); default info, silent under test. */
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /**
   * GET /metrics and /readyz's details require `Authorization: Bearer <METRICS_TOKEN>`. Unset,
   * outside development and test /metrics answers 401 and /readyz its status only (the server
   * still starts); in development and test both are open.
   */
  METRICS_TOKEN: z
    .string()
    .regex(/^[A-Za-z0-9._~+/=-]{16,256}$/, "must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = - (a bearer token)")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  /** On SIGTERM, how long in-flight sends, webhook attempts and requests may still finish. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(600).default(25),
  /**
   * Bench only: SIGUSR2 switches the request log and request metrics (the HTTP hook of
   * server/observability) off and on in the running process, so npm run bench can measure what
   * they cost on one process, with its JIT, heap and CPU placement unchanged.
   */
  BENCH_OBSERVABILITY_SWITCH: bool.optional(),
  /** Serves /api/bench/echo, the trivial route npm run bench measures /v1 against. */
  BENCH_ECHO: bool.optional(),
});

export type Config = z.infer<typeof EnvSchema> & {
  dataDir: string | null;
  storage: StorageLocation;
  /** Which engine delivers the outbox: the embedded runner, or Inngest functions. */
  deliveryEngine: "embedded" | "inngest";
  webhookAllowInsecure: boolean;
  providerAllowPrivate: boolean;
  /** PROVIDER_MEDIA_FROM_BASE_URL outside production; false in production whatever it says. */
  providerMediaFromBaseUrl: boolean;
  simulatorEnabled: boolean;
  /** TRUST_PROXY_HOPS, or 1 for TRUST_PROXY=true, else 0. */
  proxyHops: number;
  /**
   * Production-like: any NODE_ENV but development and test (staging, preview, a typo), so a
   * deployment gets the secure defaults unless it says otherwise: no insecure webhook URLs,
   * GraphiQL or introspection, development seed account, or simulator.
   */
  isProduction: boolean;
  isTest: boolean;
};

/** A setting the service cannot run with: one line per variable, each naming it. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Parses an environment (process.env, or a literal one in tests). */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = EnvSchema.safeParse(env);
  if (!result.success) throw new ConfigError(result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`));
  const c = result.data;
  const isProduction = c.NODE_ENV !== "development" && c.NODE_ENV !== "test";
  return {
    ...c,
    dataDir: c.DATA_DIR === ":memory:" ? null : path.resolve(/*turbopackIgnore: true*/ c.DATA_DIR),
    storage: storageLocation(c.STORAGE_URL, c.DATA_DIR, env),
    deliveryEngine: c.INNGEST_EVENT_KEY || (c.INNGEST_DEV && !["0", "false"].includes(c.INNGEST_DEV.toLowerCase())) ? "inngest" : "embedded",
    webhookAllowInsecure: c.WEBHOOK_ALLOW_INSECURE ?? !isProduction,
    providerAllowPrivate: c.PROVIDER_ALLOW_PRIVATE ?? c.NODE_ENV === "development",
    providerMediaFromBaseUrl: !isProduction && c.PROVIDER_MEDIA_FROM_BASE_URL === true,
    simulatorEnabled: c.SIMULATOR_ENABLED ?? !isProduction,
    proxyHops: c.TRUST_PROXY_HOPS ?? (c.TRUST_PROXY ? 1 : 0),
    isProduction,
    isTest: c.NODE_ENV === "test",
  };
}

/** STORAGE_URL, else DATA_DIR/files (memory for ":memory:"); an S3 region defaults to AWS_REGION / AWS_DEFAULT_REGION. */
function storageLocation(url: z.output<typeof StorageUrl> | undefined, dataDir: string, env: Record<string, string | undefined>): StorageLocation {
  if (url?.kind === "s3") return { ...url, region: url.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1" };
  if (url) return url;
  return dataDir === ":memory:" ? { kind: "memory" } : { kind: "local", root: path.join(/*turbopackIgnore: true*/ path.resolve(/*turbopackIgnore: true*/ dataDir), "files") };
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
