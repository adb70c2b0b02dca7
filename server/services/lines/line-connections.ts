import { z, ZodError } from "zod";
import { config } from "../../kernel/config";
import { publicUrlIsServers } from "../../kernel/public-url";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import type { Line } from "../../generated/prisma/client";
import { destinationProblem, newInboundToken, providerLine, sealConnection, unsavedProviderLine } from "../../platform/connection";
import type { AnyProvider } from "../../platform/provider";
import { DEFAULT_PROVIDER, findProvider, isMonitored, PROVIDER_NAMES } from "../../platform/registry";
import { CapabilitiesSchema, type ProbeResult } from "../../platform/types";
import { CredentialsError } from "../../db/credentials";
import { serializeLine } from "../../wire/serializers";
import { notifyChange } from "../../cache/changes";
import { noteUnmonitored, noteWebhooksInPlace, probeLine } from "./line-health";
import { catchUpLine } from "./line-monitor";
import { normalizeHandle } from "../../kernel/handles";
import { createLine, type CreateLineInput, forgetCachedLines, isSimulatedNumber } from "./lines";

// One function for the operator CLI, the dashboard and GraphQL.

export const TestLineBody = z.object({ line_id: z.string().trim().min(1).max(100) });

export const ConnectLineBody = z.object({
  line_id: z.string().trim().min(1).max(100),
  provider: z.enum(PROVIDER_NAMES),
  provider_config: z.record(z.string(), z.unknown()).default({}),
  send_rate_per_second: z.number().positive().max(100).optional(),
});
export type ConnectLineInput = z.input<typeof ConnectLineBody>;

export interface ConnectionReport {
  /** False when a connection test before saving failed and saving a failing connection was not asked for: nothing changed. */
  saved: boolean;
  line: ReturnType<typeof describeLine>;
  probe: ProbeResult;
  warnings: string[];
}

function invalidConfig(err: ZodError): ApiError {
  const detail = err.issues.map((i) => `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ");
  return new ApiError("invalid_parameter_value", `Invalid provider settings: ${detail}.`, { param: "provider_config" });
}

async function refuseLocalDestination(provider: AnyProvider, settings: unknown): Promise<void> {
  const problem = await destinationProblem(provider, settings);
  if (problem) throw new ApiError("invalid_parameter_value", `Invalid provider settings: ${problem}.`, { param: "provider_config" });
}

export async function validateSettings(provider: AnyProvider, rawConfig: unknown): Promise<void> {
  try {
    const parsed = provider.configSchema.parse(rawConfig);
    await refuseLocalDestination(provider, provider.split(parsed).settings);
  } catch (err) {
    if (err instanceof ZodError) throw invalidConfig(err);
    throw err;
  }
}

/** Provider settings (secrets never) and health besides the public shape. */
export function describeLine(line: Line) {
  const provider = findProvider(line.provider);
  let settings: Record<string, string | number | boolean | null> = {};
  try {
    settings = provider ? provider.describe(provider.load(line.providerSettings, null).settings) : {};
  } catch {
    settings = {};
  }
  return {
    ...serializeLine(line),
    provider_settings: settings,
    // A row written by an older or another provider's probe reads as none, never as a guess.
    capabilities: CapabilitiesSchema.safeParse(line.capabilities).data ?? null,
    send_rate_per_second: line.sendRatePerSecond,
    status_changed_at: line.statusChangedAt ? line.statusChangedAt.getTime() : null,
    warnings: lineWarnings(line),
  };
}

function lineWarnings(line: Line): string[] {
  const provider = findProvider(line.provider);
  if (!provider?.monitored) return [];
  let settings: unknown = null;
  try {
    settings = provider.load(line.providerSettings, null).settings;
  } catch {
    return urlWarnings(provider.name);
  }
  return [...urlWarnings(provider.name), ...(provider.warnings?.(settings) ?? [])];
}

/** A provider cannot call back a local URL (the server's: the CLI may only guess it). */
function urlWarnings(providerName: string): string[] {
  if (!isMonitored(providerName) || !publicUrlIsServers()) return [];
  const url = new URL(config().PUBLIC_URL);
  if (["localhost", "127.0.0.1", "::1", "[::1]"].includes(url.hostname)) {
    return [
      `PUBLIC_URL is ${url.origin}: the provider sends webhooks there, which works only when it runs on this machine. Set PUBLIC_URL to an address the provider can reach.`,
    ];
  }
  return [];
}

/** No inbound URL yet, so nothing is registered and no health is written. */
export async function testUnsaved(provider: AnyProvider, rawConfig: unknown, line: Pick<Line, "id" | "handle" | "service" | "advancedFeatures">): Promise<ProbeResult> {
  try {
    return await provider.probe(unsavedProviderLine(provider, rawConfig, line));
  } catch (err) {
    const reason = err instanceof CredentialsError ? err.message : `probe failed: ${(err as Error).message}`;
    return { ok: false, reason, capabilities: {}, advancedFeatures: false };
  }
}

export interface ConnectOptions {
  /** When the test fails, nothing is saved unless `saveFailing` (the owner confirmed). */
  testFirst?: { saveFailing: boolean };
  /** The operator CLI passes false: it does not know the running server's address, so the server registers them at
   * its next line check (the line is made due for one). */
  registerWebhooks?: boolean;
}

export async function connectLine(accountId: string | null, input: ConnectLineInput, options: ConnectOptions = {}): Promise<ConnectionReport> {
  const register = options.registerWebhooks !== false;
  const body = ConnectLineBody.parse(input);
  const db = await getDb();
  const line = await db.line.findUnique({ where: { id: body.line_id } });
  if (!line || line.isSandbox || (accountId !== null && line.accountId !== accountId)) {
    throw new ApiError("line_not_found", `No line with ID '${body.line_id}'.`, { param: "line_id" });
  }
  const provider = findProvider(body.provider)!;
  let sealed: ReturnType<typeof sealConnection>;
  try {
    sealed = sealConnection(provider, body.provider_config, newInboundToken(), line.id);
  } catch (err) {
    if (err instanceof ZodError) throw invalidConfig(err);
    throw err;
  }
  await refuseLocalDestination(provider, sealed.providerSettings);
  if (options.testFirst && provider.monitored) {
    const tested = await testUnsaved(provider, body.provider_config, line);
    if (!tested.ok && !options.testFirst.saveFailing) return { saved: false, line: describeLine(line), probe: tested, warnings: [] };
  }
  const switching = line.provider !== provider.name;
  const stored = await db.line.update({
    where: { id: line.id },
    data: {
      ...sealed,
      ...(body.send_rate_per_second ? { sendRatePerSecond: body.send_rate_per_second } : {}),
      failures: 0,
      // An SMS provider's line carries SMS, without reactions, typing, receipts or voice memos.
      ...(provider.service ? { service: provider.service, advancedFeatures: false } : {}),
      // Catch-up starts at the connection: the provider's older history is not imported.
      ...(switching ? { catchupAfter: provider.monitored ? new Date() : null, capabilities: undefined } : {}),
    },
  });
  // A line nobody monitors has no health to keep: it is connected (through the health writer, which records the change).
  const updated = provider.monitored ? stored : await noteUnmonitored(stored);
  forgetCachedLines();
  const result = await probeLine(updated);
  const probe = result.probe;
  const probed = accountId !== null && probe.ok && probe.handle ? await adoptProvenHandle(result.line, probe.handle) : result.line;
  const warnings = probe.ok ? lineWarnings(probed) : [];
  // A provider whose webhooks the operator sets (Twilio) is told where, whether or not it answered.
  const registersAtProvider = !!provider.webhooksRegistered;
  if (provider.registerWebhooks && (!registersAtProvider || (probe.ok && register))) {
    try {
      const said = await provider.registerWebhooks(providerLine(probed));
      warnings.push(...said);
      if (registersAtProvider && !said.length) noteWebhooksInPlace(probed.id, { renewed: true });
    } catch (err) {
      warnings.push(`Could not register this line's webhook with the provider: ${(err as Error).message}. Inbound messages arrive only through catch-up until it is registered (the server tries again at every line check).`);
    }
  }
  if (probe.ok) {
    const caught = await catchUpLine(probed.id);
    if (caught.error) warnings.push(`Catch-up failed: ${caught.error}`);
  }
  if (registersAtProvider && !register) {
    // Due for the running server's next line check, which registers the webhooks at its own address.
    await db.line.update({ where: { id: probed.id }, data: { lastProbeAt: null } });
    warnings.push("The running server registers this line's webhooks with the provider at its own PUBLIC_URL at its next line check (within seconds).");
  }
  if (probed.accountId) await notifyChange(probed.accountId);
  // Read again: catch-up may have changed the line's health.
  return { saved: true, line: describeLine(await db.line.findUniqueOrThrow({ where: { id: probed.id } })), probe, warnings: [...new Set(warnings)] };
}

// A line carries a simulated number until the provider itself names the handle it sends as (a BlueBubbles Mac's Apple
// ID), when no other line has it; a typed handle only through Add a line, after a passed test (add-line.ts).
async function adoptProvenHandle(line: Line, named: string): Promise<Line> {
  const handle = normalizeHandle(named);
  if (!handle || handle === line.handle || !isSimulatedNumber(line.handle)) return line;
  const db = await getDb();
  if (await db.line.findUnique({ where: { handle }, select: { id: true } })) return line;
  try {
    const updated = await db.line.update({ where: { id: line.id }, data: { handle } });
    forgetCachedLines();
    return updated;
  } catch (err) {
    if ((err as { code?: string }).code === "P2002") return line; // taken meanwhile
    throw err;
  }
}

export async function testLine(accountId: string | null, lineId: string): Promise<ConnectionReport> {
  const db = await getDb();
  const line = await db.line.findUnique({ where: { id: lineId } });
  if (!line || (accountId !== null && line.accountId !== accountId)) {
    throw new ApiError("line_not_found", `No line with ID '${lineId}'.`, { param: "line_id" });
  }
  const { line: probed, probe } = await probeLine(line);
  return { saved: true, line: describeLine(probed), probe, warnings: probe.ok ? lineWarnings(probed) : [] };
}

export async function createConnectedLine(
  input: CreateLineInput & { provider?: string; providerConfig?: Record<string, unknown>; sendRatePerSecond?: number },
  options: ConnectOptions = {},
): Promise<ConnectionReport> {
  const provider = input.provider ?? DEFAULT_PROVIDER;
  if (!findProvider(provider)) {
    throw new ApiError("invalid_parameter_value", `Unknown provider '${provider}'. Providers: ${PROVIDER_NAMES.join(", ")}.`, { param: "provider" });
  }
  // Validate the settings before the line exists, so a typo leaves nothing behind.
  await validateSettings(findProvider(provider)!, input.providerConfig ?? {});
  const line = await createLine(input);
  if (!isMonitored(provider)) return { saved: true, line: describeLine(line), probe: { ok: true, reason: null, capabilities: {}, advancedFeatures: line.advancedFeatures }, warnings: [] };
  return connectLine(null, {
    line_id: line.id,
    provider,
    provider_config: input.providerConfig ?? {},
    ...(input.sendRatePerSecond ? { send_rate_per_second: input.sendRatePerSecond } : {}),
  }, options);
}

export async function listConnections(accountId: string | null) {
  const db = await getDb();
  const lines = await db.line.findMany({ where: accountId ? { accountId } : {}, orderBy: { id: "asc" } });
  return lines.map(describeLine);
}
