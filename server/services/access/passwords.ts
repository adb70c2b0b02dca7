import { randomBytes, scrypt as scryptCb, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";

// Passwords: scrypt at OWASP's current parameters (N=2^17, r=8, p=1), 32-byte key, stored as
// scrypt$N$r$p$salt$hash (base64url) so hashes made with older parameters still verify and
// are recognised for rehashing. One run takes 128 MiB and about 0.4 s of a core, so runs are
// queued a few at a time: a burst of sign-ins waits instead of exhausting memory.

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number, opts: object) => Promise<Buffer>;

const SCRYPT_PARAMS = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
/** Node refuses scrypt above maxmem (default 32 MiB); 128 * N * r bytes plus headroom. */
const maxmem = (n: number, r: number) => 128 * n * r + 16 * 1024 * 1024;
/** Stored hashes come from our own database, but bound them anyway: no run above 2^20. */
const MAX_N = 2 ** 20;
const MAX_CONCURRENT = 2;

let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await fn();
  } finally {
    const nextRun = waiting.shift();
    if (nextRun) nextRun();
    else running--;
  }
}

function derive(password: string, salt: Buffer, length: number, n: number, r: number, p: number): Promise<Buffer> {
  return limited(() => scrypt(password, salt, length, { N: n, r, p, maxmem: maxmem(n, r) * p }));
}

export async function hashPassword(password: string): Promise<string> {
  const { N, r, p } = SCRYPT_PARAMS;
  const salt = randomBytes(16);
  const hash = await derive(password, salt, KEY_LENGTH, N, r, p);
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64url")}$${hash.toString("base64url")}`;
}

interface Parsed {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parse(stored: string): Parsed | null {
  const [alg, n, r, p, salt, hash, extra] = stored.split("$");
  if (alg !== "scrypt" || !n || !r || !p || !salt || !hash || extra !== undefined) return null;
  const [N, R, P] = [Number(n), Number(r), Number(p)];
  const powerOfTwo = Number.isInteger(N) && N >= 2 && N <= MAX_N && (N & (N - 1)) === 0;
  if (!powerOfTwo || !Number.isInteger(R) || R < 1 || R > 32 || !Number.isInteger(P) || P < 1 || P > 16) return null;
  const expected = Buffer.from(hash, "base64url");
  if (expected.length < 16) return null;
  return { n: N, r: R, p: P, salt: Buffer.from(salt, "base64url"), hash: expected };
}

export function needsRehash(stored: string): boolean {
  const parsed = parse(stored);
  const { N, r, p } = SCRYPT_PARAMS;
  return !parsed || parsed.n !== N || parsed.r !== r || parsed.p !== p || parsed.hash.length !== KEY_LENGTH;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const actual = await derive(password, parsed.salt, parsed.hash.length, parsed.n, parsed.r, parsed.p);
  return timingSafeEqual(parsed.hash, actual);
}
