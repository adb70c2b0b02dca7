import { createHmac, timingSafeEqual } from "node:crypto";
import { config } from "../kernel/config";
import { instanceSecret } from "../db/secrets";

const SECRET_KEY = "url_signing_secret";
const FILE_URL_TTL_SECONDS = 3600;

export async function loadSigningSecret(): Promise<Buffer> {
  return Buffer.from(await instanceSecret(SECRET_KEY));
}

function sign(key: Buffer, fileId: string, expires: number): string {
  return createHmac("sha256", key).update(`${fileId}.${expires}`).digest("base64url");
}

export type FileUrlSigner = (fileId: string) => string;

export async function fileUrlSigner(ttlSeconds = FILE_URL_TTL_SECONDS, now = Date.now()): Promise<FileUrlSigner> {
  const key = await loadSigningSecret();
  const expires = Math.floor(now / 1000) + ttlSeconds;
  const base = filesBaseUrl();
  return (fileId) => `${base}/api/files/${fileId}?expires=${expires}&signature=${sign(key, fileId, expires)}`;
}

export function filesBaseUrl(): string {
  const c = config();
  return c.FILES_PUBLIC_URL ?? c.PUBLIC_URL.replace(/\/+$/, "");
}

export async function verifyFileUrl(fileId: string, expires: string | null, signature: string | null, now = Date.now()): Promise<boolean> {
  // Only the form the signer writes: no leading zeros or signs, so one link has one spelling.
  if (!expires || !signature || !/^[1-9]\d{0,11}$/.test(expires)) return false;
  if (Number(expires) * 1000 < now) return false;
  const expected = Buffer.from(sign(await loadSigningSecret(), fileId, Number(expires)));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
