import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { config } from "../kernel/config";
import { CredentialsError, decryptJson, encryptJson, isUnboundSealed } from "../db/credentials";
import { getDb } from "../db";
import type { Line } from "../generated/prisma/client";
import type { AnyProvider, ProviderLine } from "./provider";
import { processSingleton } from "../kernel/singleton";
import { trimTrailingSlashes } from "../kernel/strings";
import { providerHostProblem } from "./http";
import { providerFor } from "./registry";
import type { Platform } from "./types";

// Secrets (the provider's and the inbound URL's token) are sealed in one value bound (AES-GCM associated data) to the
// line's ID, its provider and its base URL: copied to another line, or with the destination changed in the database, it
// no longer decrypts, so secrets are never sent where they were not given for.

const Sealed = z.object({ inboundToken: z.string().min(16), secrets: z.unknown() });

function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export function newInboundToken(): string {
  return randomBytes(24).toString("base64url");
}

export async function destinationProblem(provider: AnyProvider, settings: unknown): Promise<string | null> {
  const destination = provider.destination?.(settings);
  return destination ? providerHostProblem(destination) : null;
}

function sealContext(lineId: string, provider: AnyProvider, settings: unknown): string {
  return JSON.stringify(["relay-line-secrets", lineId, provider.name, provider.destination?.(settings) ?? ""]);
}

export function sealConnection(provider: AnyProvider, rawConfig: unknown, inboundToken: string, lineId: string) {
  const parsed = provider.configSchema.parse(rawConfig);
  const { settings, secrets } = provider.split(parsed);
  return {
    provider: provider.name,
    providerSettings: settings as object,
    providerSecrets: encryptJson({ inboundToken, secrets }, sealContext(lineId, provider, settings)),
    inboundTokenHash: hashToken(inboundToken),
  };
}

/** At start, once per row: a row changed meanwhile is left to its new value. */
export async function sealUnboundSecrets(): Promise<number> {
  const db = await getDb();
  const rows = await db.line.findMany({ where: { providerSecrets: { startsWith: "v1." } } });
  let rewritten = 0;
  for (const line of rows) {
    if (!line.providerSecrets || !isUnboundSealed(line.providerSecrets)) continue;
    const provider = providerFor(line.provider);
    let value: unknown;
    try {
      value = decryptJson(line.providerSecrets);
    } catch {
      continue; // another key: the line reports it when used, as before
    }
    const settings = provider.load(line.providerSettings, null).settings;
    const sealed = encryptJson(value, sealContext(line.id, provider, settings));
    const { count } = await db.line.updateMany({ where: { id: line.id, providerSecrets: line.providerSecrets }, data: { providerSecrets: sealed } });
    rewritten += count;
  }
  return rewritten;
}

function inboundUrl(lineId: string, token: string): string {
  return `${trimTrailingSlashes(config().PUBLIC_URL)}/api/inbound/${lineId}?token=${encodeURIComponent(token)}`;
}

/** Constant time. */
export function inboundTokenMatches(line: Pick<Line, "inboundTokenHash">, token: string | null): boolean {
  if (!line.inboundTokenHash || !token) return false;
  const a = Buffer.from(hashToken(token), "hex");
  const b = Buffer.from(line.inboundTokenHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Decrypted lines by ID, while their stored row is unchanged (the hot inbound path decrypts once). */
const decrypted = processSingleton("provider-lines", () => new Map<string, { row: Line; publicUrl: string; value: ProviderLine }>());

const sameRow = (a: Line, b: Line) =>
  a.providerSecrets === b.providerSecrets && a.provider === b.provider && a.advancedFeatures === b.advancedFeatures && a.service === b.service && a.handle === b.handle && JSON.stringify(a.providerSettings) === JSON.stringify(b.providerSettings);

export function providerLine(line: Line): ProviderLine {
  const hit = decrypted.get(line.id);
  const publicUrl = config().PUBLIC_URL; // the inbound URL is built from it
  if (hit && hit.publicUrl === publicUrl && sameRow(hit.row, line)) return hit.value;
  const value = decryptLine(line);
  if (decrypted.size > 1_000) decrypted.clear();
  decrypted.set(line.id, { row: line, publicUrl, value });
  return value;
}

function decryptLine(line: Line): ProviderLine {
  const provider = providerFor(line.provider);
  let token = "";
  let secrets: unknown = null;
  if (line.providerSecrets) {
    const context = sealContext(line.id, provider, provider.load(line.providerSettings, null).settings);
    const sealed = Sealed.safeParse(decryptJson(line.providerSecrets, isUnboundSealed(line.providerSecrets) ? undefined : context));
    if (!sealed.success) throw new CredentialsError("stored credentials are not in a known format");
    token = sealed.data.inboundToken;
    secrets = sealed.data.secrets;
  }
  return asProviderLine(line, provider.load(line.providerSettings, secrets), token ? inboundUrl(line.id, token) : "");
}

function asProviderLine(
  line: Pick<Line, "id" | "handle" | "service" | "advancedFeatures">,
  loaded: { settings: unknown; secrets: unknown },
  url: string,
): ProviderLine {
  return {
    id: line.id,
    handle: line.handle,
    service: line.service === "sms" || line.service === "auto" ? line.service : "imessage",
    advancedFeatures: line.advancedFeatures,
    settings: loaded.settings,
    secrets: loaded.secrets,
    inboundUrl: url,
  };
}

/** For "test, then save": nothing sealed or cached, and no inbound URL. */
export function unsavedProviderLine(provider: AnyProvider, rawConfig: unknown, line: Pick<Line, "id" | "handle" | "service" | "advancedFeatures">): ProviderLine {
  const { settings, secrets } = provider.split(provider.configSchema.parse(rawConfig));
  return asProviderLine(line, provider.load(settings, secrets), "");
}

export function platformForLine(line: Line): Platform {
  return providerFor(line.provider).platform(providerLine(line));
}

/** Whether a line's sends go one at a time, in order, paced (every provider but idempotent ones). */
export function isSerialLine(line: Pick<Line, "provider">): boolean {
  return !providerFor(line.provider).idempotentSends;
}

export function serialProviderNames(names: readonly string[]): string[] {
  return names.filter((n) => !providerFor(n).idempotentSends);
}
