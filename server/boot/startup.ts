import { ConfigError, config } from "../kernel/config";
import { checkStorage } from "../storage";
import { database, getDb } from "../db";
import { releaseAllClaims } from "../outbox/queue";
import { checkFfmpeg } from "../audio/ffmpeg";
import { bootstrap } from "./bootstrap";
import { releaseExpiredDeliveries } from "../webhooks/delivery";
import { startEngine } from "../engine";
import { inngestAnnouncer } from "../../inngest/announcer";
import { seedDevAccount } from "./dev-seed";
import { ownSignals } from "./lifecycle";
import { installHttpHook, switchObservabilityOnSignal } from "../transports/ops/http-hook";
import { credentialsKeySource } from "../db/credentials";
import { sealUnboundSecrets } from "../platform/connection";
import { type RouteModule, registerFastRoutes } from "../transports/http/fast-routes";
import { log, logSettled } from "../kernel/log";
import { processSingleton } from "../kernel/singleton";
import { readyBanner } from "./banner";

/** A setting the service cannot run with stops it before any request: a line per problem, exit 1. */
function refuseToStart(problems: string[]): never {
  for (const problem of problems) console.error(`Relay cannot start: ${problem}`);
  process.exit(1);
}

export interface StartOptions {
  /** Route files the production server answers before Next, by path (the /v1 operations and /api/mcp; see fast-routes.ts). */
  fastRoutes?: Readonly<Record<string, RouteModule>>;
}

/** Once per process: a second register() (a dev reload of instrumentation) gets the first start, not a second banner and engine. */
const started = processSingleton("startup", () => ({ run: null as Promise<void> | null }));

/** scripts/start.mjs puts a function here and prints "Ready on …" when it is called, never before a refusal. */
const ON_STARTED = Symbol.for("relay.on-started");

export function startServer(options: StartOptions = {}): Promise<void> {
  started.run ??= start(options).then(async () => {
    await logSettled(); // the log batches and writes asynchronously: the banner goes out before "Ready"
    const onStarted = (globalThis as Record<symbol, unknown>)[ON_STARTED];
    if (typeof onStarted === "function") onStarted();
  });
  return started.run;
}

async function start(options: StartOptions): Promise<void> {
  let c: ReturnType<typeof config>;
  try {
    c = config();
  } catch (err) {
    if (err instanceof ConfigError) refuseToStart(err.problems);
    throw err;
  }
  installHttpHook();
  if (c.BENCH_OBSERVABILITY_SWITCH) switchObservabilityOnSignal();
  ownSignals();
  // Storage before anything is accepted: a bucket that cannot be reached or refuses the
  // credentials is a configuration error, not a 503 on the first upload.
  await checkStorage().catch((err: unknown) => refuseToStart([(err as Error).message]));
  await bootstrap();
  // Provider secrets sealed before they were bound to their line are sealed again, bound.
  await sealUnboundSecrets().catch((err: unknown) => log().error({ err }, "sealing provider secrets to their lines failed"));
  registerFastRoutes(options.fastRoutes);
  const { kind } = await database();
  if (kind === "pglite") {
    const released = await releaseAllClaims();
    if (released) log().warn({ outbox_items: released }, "items claimed before a crash are pending again");
    const deliveries = await releaseExpiredDeliveries(new Date(), { all: true });
    if (deliveries) log().warn({ webhook_deliveries: deliveries }, "deliveries under way before a crash will be sent again (same delivery IDs)");
  }
  await startEngine({ announcer: inngestAnnouncer });
  const db = await getDb();
  const accounts = await db.account.count();
  const seed = !c.isProduction && accounts === 0 && c.EMBEDDED_SEED !== false ? await seedDevAccount() : null;
  log().info(readyBanner(c, process.env, seed));
  const keySource = credentialsKeySource();
  if (c.isProduction && keySource !== "env") {
    log().warn(
      { key_file: c.dataDir ? `${c.dataDir}/credentials.key` : null },
      "CREDENTIALS_KEY is not set: provider credentials are encrypted with a generated key. Set CREDENTIALS_KEY (the same on every instance) and keep it safe: without it stored line credentials cannot be read.",
    );
  }
  const ffmpeg = await checkFfmpeg();
  if (!ffmpeg.ok) {
    log().warn(
      { reason: ffmpeg.reason, ffmpeg_path: ffmpeg.path },
      "POST /v1/audio-messages answers 503 audio_conversion_unavailable until ffmpeg with libopus and ffprobe is installed",
    );
  }
}
