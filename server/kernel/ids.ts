import { randomBytes } from "node:crypto";

// prefix_ + 10 chars of millisecond time + 16 random, Crockford base32: lexical order is creation order.

export const ID_PREFIXES = {
  user: "usr",
  account: "acct",
  apiKey: "key",
  line: "ln",
  chat: "cht",
  message: "msg",
  attachment: "att",
  file: "file",
  reaction: "rxn",
  typing: "ind",
  receipt: "rcp",
  outbox: "obx",
  webhook: "wh",
  delivery: "dlv",
  attempt: "wha",
  idempotency: "idem",
  request: "req",
  listenSession: "lsn",
  pool: "pool",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

function encodeTime(ms: number): string {
  let out = "";
  let n = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

// One call into the CSPRNG per 256 IDs, not per ID: IDs are minted on every request.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function encodeRandom(len: number): string {
  if (poolOffset + len > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  let out = "";
  for (let i = 0; i < len; i++) out += ALPHABET[pool[poolOffset + i]! & 31];
  poolOffset += len;
  return out;
}

export function newId(kind: IdKind, now = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${encodeTime(now)}${encodeRandom(16)}`;
}

const BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`;
  return value.startsWith(prefix) && BODY.test(value.slice(prefix.length));
}

export function hasPrefix(kind: IdKind, value: string): boolean {
  return value.startsWith(`${ID_PREFIXES[kind]}_`);
}
