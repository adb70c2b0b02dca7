// Operator CLI (docs/operator-cli.md): results on stdout, errors on stderr, exit 1. It reads the server's configuration
// (admin-env.ts) and works on the running server's database (admin-database.ts).
import "./admin-env";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z, ZodError } from "zod";
import { PROVIDER_ABOUTS, providerConfigHelp } from "../server/platform/about";
import { runningServerUrl, useServersDatabase } from "./admin-database";
import { isKeyCommand, KEY_USAGE, runKeyCommand } from "./admin-keys";
import { isSendPolicyCommand, runSendPolicyCommand, SEND_POLICY_USAGE, UsageError } from "./admin-send-policy";

const PROVIDERS = PROVIDER_ABOUTS.map((p) => p.name).join("|");

const USAGE = `usage:
  admin account create --email E [--password P] [--no-owner]
  admin line create --account E --handle H [--label L] [--service imessage|sms|auto] [--advanced]
                    [--provider ${PROVIDERS} SETTINGS] [--rate MESSAGES_PER_SECOND]
  admin line connect --line ln_... --provider ${PROVIDERS} SETTINGS [--rate MESSAGES_PER_SECOND]
      SETTINGS: --provider-config-file PATH (a JSON file; - reads stdin) or --provider-config JSON (- reads stdin);
      the file or stdin keeps passwords and tokens out of shell history and the process list;
      the settings (? optional): ${providerConfigHelp()}
  admin line test --line ln_...
  admin line list [--account E] [--json]
${SEND_POLICY_USAGE}
${KEY_USAGE}
  admin backup --out FILE [--force]     embedded database, files and credentials key in one .tar.gz (works while the server runs)
  admin restore --from FILE [--force]   into DATA_DIR, server stopped; --force moves existing data to DATA_DIR.before-restore-<time>`;

/** Provider webhooks are registered by the running server, at its own PUBLIC_URL (docs/operator-cli.md), never from here. */
const SERVER_REGISTERS = { registerWebhooks: false };

/** Commands that change data: each says on stderr which database it writes to. */
const WRITES = new Set(["account create", "line create", "line connect", "line test", "pool create", "pool add-line", "pool remove-line", "pool delete", "key create", "key guard", "key revoke"]);

function writes(argv: string[]): boolean {
  const command = argv.slice(0, 2).join(" ");
  return WRITES.has(command) || (command === "line policy" && argv.includes("--json"));
}

function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

function positiveNumber(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number`);
  return n;
}

/** Provider settings are small; a larger input is a mistake (a wrong file, a binary). */
const MAX_PROVIDER_CONFIG_BYTES = 64 * 1024;

function readStdin(): string {
  if (process.stdin.isTTY) console.error("Reading the provider settings (JSON) from the terminal; end with Ctrl-D.");
  return readFileSync(0, "utf8");
}

/** Also from a file or stdin, so passwords and tokens can stay off the command line and out of shell history and `ps`. */
function providerConfig(values: { "provider-config"?: string; "provider-config-file"?: string }): Record<string, unknown> {
  const inline = values["provider-config"];
  const file = values["provider-config-file"];
  if (inline !== undefined && file !== undefined) throw new UsageError("give --provider-config or --provider-config-file, not both");
  let raw: string;
  let source: string;
  if (file !== undefined) {
    source = file === "-" ? "--provider-config-file - (stdin)" : `--provider-config-file ${file}`;
    try {
      raw = file === "-" ? readStdin() : readFileSync(file, "utf8");
    } catch (err) {
      throw new UsageError(`${source}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  } else if (inline !== undefined) {
    source = inline === "-" ? "--provider-config - (stdin)" : "--provider-config";
    raw = inline === "-" ? readStdin() : inline;
  } else {
    return {};
  }
  if (Buffer.byteLength(raw) > MAX_PROVIDER_CONFIG_BYTES) throw new UsageError(`${source} is over ${MAX_PROVIDER_CONFIG_BYTES / 1024} KiB: provider settings are a small JSON object`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UsageError(`${source} must be a JSON object, e.g. '{"url":"http://mac.local:1234","password":"..."}'`);
  }
  const object = z.record(z.string(), z.unknown()).safeParse(parsed);
  if (!object.success) throw new UsageError(`${source} must be a JSON object`);
  return object.data;
}

interface Report {
  line: { id: string; handle: string; provider: string; status: string; status_reason: string | null; advanced_features: boolean };
  probe: { ok: boolean; reason: string | null; capabilities: Record<string, unknown> };
  warnings: string[];
}

function printWarnings(report: Report): void {
  if (!report.probe.ok) console.error(`warning: the provider did not answer: ${report.probe.reason ?? "no reason given"}`);
  for (const w of report.warnings) console.error(`warning: ${w}`);
}

function printReport(report: Report, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  const { line, probe } = report;
  console.log(`line ${line.id} (${line.handle}) on ${line.provider}: ${line.status}${line.status_reason ? ` (${line.status_reason})` : ""}`);
  console.log(`probe: ${probe.ok ? "ok" : `failed: ${probe.reason ?? "no reason given"}`}`);
  if (probe.ok && probe.reason) console.log(`note: ${probe.reason}`);
  console.log(`advanced features: ${line.advanced_features ? "yes" : "no"}`);
  for (const [k, v] of Object.entries(probe.capabilities)) console.log(`  ${k}: ${v}`);
  for (const w of report.warnings) console.error(`warning: ${w}`);
}

const sizeText = (bytes: number) => (bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`);

function appVersion(): string {
  return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

async function backupCommand(command: "backup" | "restore", values: { out?: string; from?: string; force?: boolean }): Promise<void> {
  if (process.env.DATABASE_URL) {
    throw new Error(
      command === "backup"
        ? "DATABASE_URL is set: backups of PostgreSQL are pg_dump's job (copy DATA_DIR/files and DATA_DIR/credentials.key beside the dump); admin backup covers the embedded database."
        : "DATABASE_URL is set: restoring PostgreSQL is pg_restore's job; admin restore covers the embedded database.",
    );
  }
  const { config } = await import("../server/kernel/config");
  const dataDir = config().dataDir;
  if (!dataDir) throw new Error("DATA_DIR is :memory:, which keeps nothing on disk to back up or restore into.");
  const force = values.force ?? false;
  if (command === "backup") {
    const { createBackup } = await import("../server/backup/backup");
    const out = required(values, "out");
    const { manifest, bytes, mismatched } = await createBackup({ dataDir, out, serverUrl: await runningServerUrl(), appVersion: appVersion(), force });
    for (const id of manifest.files.missing) console.error(`warning: the bytes of ${id} were already missing from file storage; the backup holds its row only`);
    for (const id of mismatched) console.error(`warning: the bytes of ${id} in file storage do not match its sha256; copied as they are`);
    const tables = Object.values(manifest.database.tables);
    const rows = tables.reduce((sum, t) => sum + t.rows, 0);
    console.log(
      `wrote ${out} (${sizeText(bytes)}): ${rows} rows in ${tables.length} tables, ${manifest.files.count} files (${sizeText(manifest.files.bytes)})${manifest.credentials_key ? ", credentials.key" : ""}; schema ${manifest.database.migration}`,
    );
    console.log(
      `${out} contains secrets (${manifest.credentials_key ? "the credentials key, " : ""}password and API key hashes, webhook secrets, encrypted provider credentials): it is readable by this user only (mode 0600); keep it that way.`,
    );
    if (process.env.CREDENTIALS_KEY) console.log("CREDENTIALS_KEY is set: provider credentials are encrypted with it, and it is not in the backup; keep it with the backup.");
    return;
  }
  const { restoreBackup } = await import("../server/backup/restore");
  const from = required(values, "from");
  const { manifest, rows, movedAside } = await restoreBackup({ dataDir, from, force });
  const tables = Object.keys(manifest.database.tables).length;
  console.log(
    `restored ${from} (made ${manifest.created_at} by Relay ${manifest.app_version}, schema ${manifest.database.migration}) into ${dataDir}: ${rows} rows in ${tables} tables, ${manifest.files.count} files${manifest.credentials_key ? ", credentials.key" : ""}`,
  );
  if (movedAside) console.log(`the data that was in ${dataDir} is now in ${movedAside}; delete it once the restored server checks out`);
  if (!manifest.credentials_key) console.log("the backup holds no credentials.key: if the backed-up server had CREDENTIALS_KEY set, set the same here (stored provider credentials need it)");
  console.log("start the server as usual: migrations newer than the backup apply on start");
}

async function main(argv: string[]): Promise<void> {
  // Results go to stdout for scripts; what the service logs while the command runs (a line's
  // status change, a migration warning) goes to stderr beside the errors.
  const { resetLogger } = await import("../server/kernel/log");
  resetLogger({ write: (line: string) => void process.stderr.write(line) });
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(USAGE);
    return;
  }
  const run = isSendPolicyCommand(argv) ? runSendPolicyCommand : isKeyCommand(argv) ? runKeyCommand : null;
  if (run) {
    await useServersDatabase({ write: writes(argv) });
    const { closeDatabase } = await import("../server/db");
    return run(argv).finally(() => closeDatabase());
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: "string" },
      password: { type: "string" },
      "no-owner": { type: "boolean" },
      account: { type: "string" },
      handle: { type: "string" },
      label: { type: "string" },
      service: { type: "string" },
      advanced: { type: "boolean" },
      line: { type: "string" },
      provider: { type: "string" },
      "provider-config": { type: "string" },
      "provider-config-file": { type: "string" },
      rate: { type: "string" },
      json: { type: "boolean" },
      out: { type: "string" },
      from: { type: "string" },
      force: { type: "boolean" },
    },
  });
  const command = positionals.join(" ");
  if (command === "backup" || command === "restore") return backupCommand(command, values);
  await useServersDatabase({ write: writes(argv) });
  const { closeDatabase } = await import("../server/db");
  const { createAccount, findAccountByEmail } = await import("../server/services/accounts/accounts");
  const { connectLine, createConnectedLine, listConnections, testLine } = await import("../server/services/lines/line-connections");
  try {
    switch (command) {
      case "account create": {
        const account = await createAccount({
          email: required(values, "email"),
          password: values.password,
          noOwner: values["no-owner"] ?? false,
        });
        console.log(account.id);
        break;
      }
      case "line create": {
        const account = await findAccountByEmail(required(values, "account"));
        const service = values.service ?? "imessage";
        if (service !== "imessage" && service !== "sms" && service !== "auto") {
          throw new UsageError("--service must be imessage, sms or auto");
        }
        const report = await createConnectedLine({
          accountId: account.id,
          handle: required(values, "handle"),
          label: values.label ?? null,
          service,
          advancedFeatures: values.advanced ?? false,
          ...(values.provider ? { provider: values.provider } : {}),
          providerConfig: providerConfig(values),
          ...(values.rate !== undefined ? { sendRatePerSecond: positiveNumber(values.rate, "rate") } : {}),
        }, SERVER_REGISTERS);
        printWarnings(report);
        console.log(report.line.id);
        break;
      }
      case "line connect": {
        const report = await connectLine(null, {
          line_id: required(values, "line"),
          provider: required(values, "provider"),
          provider_config: providerConfig(values),
          ...(values.rate !== undefined ? { send_rate_per_second: positiveNumber(values.rate, "rate") } : {}),
        }, SERVER_REGISTERS);
        printReport(report, values.json ?? false);
        break;
      }
      case "line test": {
        const report = await testLine(null, required(values, "line"));
        printReport(report, values.json ?? false);
        if (!report.probe.ok) process.exitCode = 1;
        break;
      }
      case "line list": {
        const accountId = values.account ? (await findAccountByEmail(values.account)).id : null;
        const lines = await listConnections(accountId);
        if (values.json) {
          console.log(JSON.stringify(lines, null, 2));
          break;
        }
        console.log(["ID", "HANDLE", "PROVIDER", "STATUS", "FEATURES", "SETTINGS"].join("\t"));
        for (const l of lines) {
          const settings = Object.entries(l.provider_settings).map(([k, v]) => `${k}=${v}`).join(" ");
          console.log([l.id, l.handle, l.provider, l.status + (l.status_reason ? ` (${l.status_reason})` : ""), l.advanced_features ? "advanced" : "basic", settings].join("\t"));
        }
        break;
      }
      default:
        throw new UsageError(command ? `unknown command '${command}'` : "no command given");
    }
  } finally {
    await closeDatabase();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    if (err instanceof ZodError) {
      // Each problem names its field (quiet_hours.timezone: must be an IANA time zone ...).
      console.error(`error: ${err.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")}`);
    } else {
      console.error(`error: ${(err as Error).message}`);
    }
    if (err instanceof UsageError) console.error(USAGE);
    process.exit(1);
  },
);
