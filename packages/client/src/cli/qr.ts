// QR encoder (ISO/IEC 18004, byte mode, ECC L or M) so `relay sandbox activate` draws its sms: link without a
// dependency; tests compare every mask's matrix with the `qrcode` package the dashboard uses.

export type QrErrorCorrection = "L" | "M";

export interface QrCode {
  version: number;
  mask: number;
  /** size x size modules, [y][x], true = dark. */
  modules: boolean[][];
}

// Per version (index 1-40): error correction codewords per block, and number of blocks.
const ECC_PER_BLOCK: Record<QrErrorCorrection, number[]> = {
  L: [-1, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  M: [-1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
};
const BLOCKS: Record<QrErrorCorrection, number[]> = {
  L: [-1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  M: [-1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
};
const FORMAT_BITS: Record<QrErrorCorrection, number> = { L: 1, M: 0 };

const bit = (value: number, i: number) => ((value >>> i) & 1) !== 0;

function rawDataModules(version: number): number {
  let result = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    result -= (25 * align - 10) * align - 55;
    if (version >= 7) result -= 36;
  }
  return result;
}

const dataCodewords = (version: number, ecl: QrErrorCorrection) => Math.floor(rawDataModules(version) / 8) - ECC_PER_BLOCK[ecl][version]! * BLOCKS[ecl][version]!;

/** Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1. */
function gfMultiply(x: number, y: number): number {
  let z = 0;
  for (let i = 7; i >= 0; i--) {
    z = (z << 1) ^ ((z >>> 7) * 0x11d);
    z ^= ((y >>> i) & 1) * x;
  }
  return z;
}

function reedSolomonDivisor(degree: number): number[] {
  const result = new Array<number>(degree).fill(0);
  result[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      result[j] = gfMultiply(result[j]!, root);
      if (j + 1 < degree) result[j]! ^= result[j + 1]!;
    }
    root = gfMultiply(root, 0x02);
  }
  return result;
}

function reedSolomonRemainder(data: number[], divisor: number[]): number[] {
  const result = divisor.map(() => 0);
  for (const b of data) {
    const factor = b ^ result.shift()!;
    result.push(0);
    divisor.forEach((coefficient, i) => (result[i]! ^= gfMultiply(coefficient, factor)));
  }
  return result;
}

function addErrorCorrection(data: number[], version: number, ecl: QrErrorCorrection): number[] {
  const blockCount = BLOCKS[ecl][version]!;
  const eccLength = ECC_PER_BLOCK[ecl][version]!;
  const raw = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blockCount - (raw % blockCount);
  const shortLength = Math.floor(raw / blockCount);
  const divisor = reedSolomonDivisor(eccLength);
  const blocks: number[][] = [];
  for (let i = 0, k = 0; i < blockCount; i++) {
    const chunk = data.slice(k, k + shortLength - eccLength + (i < shortBlocks ? 0 : 1));
    k += chunk.length;
    const ecc = reedSolomonRemainder(chunk, divisor);
    if (i < shortBlocks) chunk.push(0);
    blocks.push(chunk.concat(ecc));
  }
  const result: number[] = [];
  for (let i = 0; i < blocks[0]!.length; i++) {
    blocks.forEach((block, j) => {
      if (i !== shortLength - eccLength || j >= shortBlocks) result.push(block[i]!);
    });
  }
  return result;
}

function alignmentPositions(version: number): number[] {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = Math.floor((version * 8 + count * 3 + 5) / (count * 4 - 4)) * 2;
  const result = [6];
  for (let pos = version * 4 + 17 - 7; result.length < count; pos -= step) result.splice(1, 0, pos);
  return result;
}

const MASKS: ((x: number, y: number) => boolean)[] = [
  (x, y) => (x + y) % 2 === 0,
  (_x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

class Matrix {
  readonly modules: boolean[][];
  readonly reserved: boolean[][];
  constructor(readonly size: number) {
    this.modules = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
    this.reserved = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
  }
  fn(x: number, y: number, dark: boolean) {
    this.modules[y]![x] = dark;
    this.reserved[y]![x] = true;
  }
}

function drawFunctionPatterns(m: Matrix, version: number) {
  const size = m.size;
  for (let i = 0; i < size; i++) {
    m.fn(6, i, i % 2 === 0);
    m.fn(i, 6, i % 2 === 0);
  }
  for (const [cx, cy] of [
    [3, 3],
    [size - 4, 3],
    [3, size - 4],
  ] as const) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const distance = Math.max(Math.abs(dx), Math.abs(dy));
        const x = cx + dx;
        const y = cy + dy;
        if (x >= 0 && x < size && y >= 0 && y < size) m.fn(x, y, distance !== 2 && distance !== 4);
      }
    }
  }
  const positions = alignmentPositions(version);
  const last = positions.length - 1;
  positions.forEach((py, i) =>
    positions.forEach((px, j) => {
      if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
      for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) m.fn(px + dx, py + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
    }),
  );
  drawFormatBits(m, "L", 0); // reserves the areas; redrawn with the real values
  if (version >= 7) {
    let remainder = version;
    for (let i = 0; i < 12; i++) remainder = (remainder << 1) ^ ((remainder >>> 11) * 0x1f25);
    const bits = (version << 12) | remainder;
    for (let i = 0; i < 18; i++) {
      const a = size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      m.fn(a, b, bit(bits, i));
      m.fn(b, a, bit(bits, i));
    }
  }
}

function drawFormatBits(m: Matrix, ecl: QrErrorCorrection, mask: number) {
  const data = (FORMAT_BITS[ecl] << 3) | mask;
  let remainder = data;
  for (let i = 0; i < 10; i++) remainder = (remainder << 1) ^ ((remainder >>> 9) * 0x537);
  const bits = ((data << 10) | remainder) ^ 0x5412;
  const size = m.size;
  for (let i = 0; i <= 5; i++) m.fn(8, i, bit(bits, i));
  m.fn(8, 7, bit(bits, 6));
  m.fn(8, 8, bit(bits, 7));
  m.fn(7, 8, bit(bits, 8));
  for (let i = 9; i < 15; i++) m.fn(14 - i, 8, bit(bits, i));
  for (let i = 0; i < 8; i++) m.fn(size - 1 - i, 8, bit(bits, i));
  for (let i = 8; i < 15; i++) m.fn(8, size - 15 + i, bit(bits, i));
  m.fn(8, size - 8, true); // the dark module
}

function drawCodewords(m: Matrix, codewords: number[]) {
  const size = m.size;
  let i = 0;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    for (let vertical = 0; vertical < size; vertical++) {
      for (let j = 0; j < 2; j++) {
        const x = right - j;
        const upward = ((right + 1) & 2) === 0;
        const y = upward ? size - 1 - vertical : vertical;
        if (!m.reserved[y]![x] && i < codewords.length * 8) {
          m.modules[y]![x] = bit(codewords[i >>> 3]!, 7 - (i & 7));
          i++;
        }
      }
    }
  }
}

function applyMask(m: Matrix, mask: number) {
  const test = MASKS[mask]!;
  for (let y = 0; y < m.size; y++) for (let x = 0; x < m.size; x++) if (!m.reserved[y]![x] && test(x, y)) m.modules[y]![x] = !m.modules[y]![x];
}

/** Rules N1-N4: lower is easier to scan. */
export function penalty(modules: boolean[][]): number {
  const size = modules.length;
  let score = 0;
  const at = (x: number, y: number, vertical: boolean) => (vertical ? modules[x]![y]! : modules[y]![x]!);
  const finderLike = [true, false, true, true, true, false, true];
  for (const vertical of [false, true]) {
    for (let y = 0; y < size; y++) {
      let run = 1;
      for (let x = 1; x <= size; x++) {
        if (x < size && at(x, y, vertical) === at(x - 1, y, vertical)) run++;
        else {
          if (run >= 5) score += 3 + run - 5;
          run = 1;
        }
      }
      for (let x = 0; x + 7 <= size; x++) {
        if (!finderLike.every((dark, k) => at(x + k, y, vertical) === dark)) continue;
        const lightBefore = [1, 2, 3, 4].every((k) => x - k < 0 || !at(x - k, y, vertical));
        const lightAfter = [0, 1, 2, 3].every((k) => x + 7 + k >= size || !at(x + 7 + k, y, vertical));
        if (lightBefore || lightAfter) score += 40;
      }
    }
  }
  for (let y = 0; y + 1 < size; y++) {
    for (let x = 0; x + 1 < size; x++) {
      const c = modules[y]![x];
      if (c === modules[y]![x + 1] && c === modules[y + 1]![x] && c === modules[y + 1]![x + 1]) score += 3;
    }
  }
  const dark = modules.reduce((n, row) => n + row.filter(Boolean).length, 0);
  const total = size * size;
  score += (Math.ceil(Math.abs(dark * 20 - total * 10) / total) - 1) * 10;
  return score;
}

/** The smallest version that fits; `mask` forces a pattern (0-7), else the lowest penalty wins. */
export function encodeQr(text: string, { ecl = "M", mask, version: forcedVersion }: { ecl?: QrErrorCorrection; mask?: number; version?: number } = {}): QrCode {
  const bytes = new TextEncoder().encode(text);
  let version = forcedVersion ?? 1;
  const bitsNeeded = (v: number) => 4 + (v <= 9 ? 8 : 16) + bytes.length * 8;
  while (bitsNeeded(version) > dataCodewords(version, ecl) * 8) {
    if (forcedVersion !== undefined || version >= 40) throw new RangeError(`Text too long for a QR code (${bytes.length} bytes)`);
    version++;
  }
  const capacity = dataCodewords(version, ecl) * 8;
  const bits: number[] = [];
  const push = (value: number, length: number) => {
    for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  push(0b0100, 4);
  push(bytes.length, version <= 9 ? 8 : 16);
  for (const b of bytes) push(b, 8);
  push(0, Math.min(4, capacity - bits.length));
  push(0, (8 - (bits.length % 8)) % 8);
  const data: number[] = [];
  for (let i = 0; i < bits.length; i += 8) data.push(bits.slice(i, i + 8).reduce((n, b) => (n << 1) | b, 0));
  for (let pad = 0xec; data.length < capacity / 8; pad ^= 0xec ^ 0x11) data.push(pad);

  const codewords = addErrorCorrection(data, version, ecl);
  const build = (maskIndex: number) => {
    const m = new Matrix(version * 4 + 17);
    drawFunctionPatterns(m, version);
    drawCodewords(m, codewords);
    applyMask(m, maskIndex);
    drawFormatBits(m, ecl, maskIndex);
    return m.modules;
  };
  if (mask !== undefined) return { version, mask, modules: build(mask) };
  let best: QrCode | undefined;
  let bestScore = Infinity;
  for (let i = 0; i < 8; i++) {
    const modules = build(i);
    const score = penalty(modules);
    if (score < bestScore) {
      best = { version, mask: i, modules };
      bestScore = score;
    }
  }
  return best!;
}

/** With `color`, dark-on-light is forced with ANSI colours so it scans on dark terminal themes too. */
export function renderQr(code: QrCode, { color = false, quietZone = 2 }: { color?: boolean; quietZone?: number } = {}): string {
  const size = code.modules.length;
  const dark = (x: number, y: number) => x >= 0 && y >= 0 && x < size && y < size && code.modules[y]![x]!;
  const lines: string[] = [];
  for (let y = -quietZone; y < size + quietZone; y += 2) {
    let line = "";
    for (let x = -quietZone; x < size + quietZone; x++) {
      const top = dark(x, y);
      const bottom = y + 1 < size + quietZone && dark(x, y + 1);
      line += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " ";
    }
    lines.push(color ? `\x1b[30;107m${line}\x1b[0m` : line);
  }
  return lines.join("\n");
}
