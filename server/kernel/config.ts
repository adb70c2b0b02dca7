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

// S3 bucket names: 3 to 63 of [a-z0-9.-], a letter or digit at each end, no "..", not an IP address.
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
  DATABASE_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, "must be a lowercase SQL identifier")
    .default("public"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_FAILURE_EXIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  DATA_DIR: z.string().default("./data"),
  STORAGE_URL: StorageUrl.optional(),
  PUBLIC_URL: z.string().url().default(`http://localhost:${process.env.PORT ?? 3000}`),
  FILES_PUBLIC_URL: z
    .string()
    .url()
    .regex(/^https?:\/\//, "must be an http:// or https:// URL")
    .transform((u) => u.replace(/\/+$/, ""))
    .optional()
    .or(z.literal("").transform(() => undefined)),
  MAX_JSON_BODY_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(1024 * 1024),
  RATE_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(10_000),
  SANDBOX_LINE_HANDLE: z.string().min(3).default("+15555550100"),
  SANDBOX_DAILY_LIMIT: z.coerce.number().int().min(1).default(50),
  API_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(60).default(5),
  PGLITE_THREAD: bool.default(true),
  MAX_STREAMS_PER_KEY: z.coerce.number().int().min(1).max(10_000).default(10),
  MAX_STREAMS_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(50),
  EMBEDDED_SEED: bool.optional(),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(16).optional(),
  TRUST_PROXY: bool.default(false),
  GRAPHQL_INTROSPECTION: z.enum(["authenticated", "on", "off"]).default("authenticated"),
  FFMPEG_PATH: z.string().trim().min(1).default("ffmpeg"),
  INNGEST_EVENT_KEY: z.string().trim().optional(),
  INNGEST_SIGNING_KEY: z.string().trim().optional(),
  INNGEST_BASE_URL: z.string().url().optional().or(z.literal("").transform(() => undefined)),
  WEBHOOK_ALLOW_INSECURE: bool.optional(),
  SIMULATOR_ENABLED: bool.optional(),
  INNGEST_DEV: z.string().trim().optional(),
  CREDENTIALS_KEY: z
    .string()
    .min(32, "must be at least 32 characters (e.g. openssl rand -base64 32)")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  PROVIDER_SEND_WINDOW_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(3_600),
  PROVIDER_PROBE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(60),
  PROVIDER_CHECK_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  PROVIDER_CHECK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(8),
  MAX_LINES_PER_ACCOUNT: z.coerce.number().int().min(1).max(1_000_000).default(100),
  PROVIDER_ALLOW_PRIVATE: bool.optional(),
  PROVIDER_MEDIA_FROM_BASE_URL: bool.optional(),
  PROVIDER_DOWNLOADS_PER_PROCESS: z.coerce.number().int().min(1).max(256).default(8),
  PROVIDER_DOWNLOADS_PER_LINE: z.coerce.number().int().min(1).max(64).default(2),
  PROVIDER_MAX_ATTACHMENT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(100 * 1024 * 1024),
  ACCOUNT_STORAGE_QUOTA_MB: z.coerce.number().int().min(1).max(1_000_000_000).default(5000),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .optional()
    .or(z.literal("").transform(() => undefined)),
  METRICS_TOKEN: z
    .string()
    .regex(/^[A-Za-z0-9._~+/=-]{16,256}$/, "must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = - (a bearer token)")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(600).default(25),
  BENCH_OBSERVABILITY_SWITCH: bool.optional(),
  BENCH_ECHO: bool.optional(),
});

export type Config = z.infer<typeof EnvSchema> & {
  dataDir: string | null;
  storage: StorageLocation;
  deliveryEngine: "embedded" | "inngest";
  webhookAllowInsecure: boolean;
  providerAllowPrivate: boolean;
  providerMediaFromBaseUrl: boolean;
  simulatorEnabled: boolean;
  proxyHops: number;
  /** Any NODE_ENV but development and test (staging, a typo): a deployment gets the secure defaults unless it says otherwise. */
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

export function resetConfig(): void {
  cached = undefined;
}
