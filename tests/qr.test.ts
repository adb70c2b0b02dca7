import QRCode from "qrcode";
import { describe, expect, it } from "vitest";
import { encodeQr, penalty, renderQr, type QrErrorCorrection } from "@/packages/client/src/cli/qr";

// The CLI's QR encoder against an independent implementation (the `qrcode` package the
// dashboard draws with): same version, same modules for every mask, for lengths that cross
// version boundaries (block layouts, alignment patterns, version information from 7 up).

function reference(text: string, ecl: QrErrorCorrection, mask: number, version?: number): boolean[][] {
  const code = QRCode.create([{ data: new TextEncoder().encode(text), mode: "byte" }], { errorCorrectionLevel: ecl, maskPattern: mask as QRCode.QRCodeMaskPattern, version });
  const size = code.modules.size;
  return Array.from({ length: size }, (_, y) => Array.from({ length: size }, (_, x) => code.modules.get(y, x) === 1));
}

const sample = (n: number) => Array.from({ length: n }, (_, i) => "sms:+15550100123&body=ABC23é"[i % 28]).join("");

describe("QR encoder", () => {
  for (const ecl of ["L", "M"] as const) {
    it(`matches the reference module for module at level ${ecl} (every mask, versions 1 to 40)`, () => {
      const seen = new Set<number>();
      for (const length of [1, 14, 17, 30, 40, 60, 100, 150, 230, 300, 420, 600, 800, 1000, 1300, 1700, 2000, 2200]) {
        const text = sample(length);
        const ours = encodeQr(text, { ecl, mask: 0 });
        seen.add(ours.version);
        for (let mask = 0; mask < 8; mask++) {
          expect(encodeQr(text, { ecl, mask }).modules, `length ${length} mask ${mask}`).toEqual(reference(text, ecl, mask));
        }
        // The smallest version: the reference refuses the one below.
        if (ours.version > 1) expect(() => reference(text, ecl, 0, ours.version - 1)).toThrow();
      }
      expect(Math.max(...seen)).toBeGreaterThanOrEqual(30);
    });
  }

  it("picks the mask with the lowest penalty and refuses text that cannot fit", () => {
    const text = "sms:+15550100123&body=K7QX2M";
    const chosen = encodeQr(text);
    const scores = Array.from({ length: 8 }, (_, mask) => penalty(encodeQr(text, { mask }).modules));
    expect(penalty(chosen.modules)).toBe(Math.min(...scores));
    expect(chosen.modules).toEqual(encodeQr(text, { mask: chosen.mask }).modules);
    expect(() => encodeQr("x".repeat(3000))).toThrow(RangeError);
  });

  it("renders two module rows per line inside a quiet zone, with forced colours on request", () => {
    const code = encodeQr("hi");
    const plain = renderQr(code).split("\n");
    const size = code.modules.length; // 21
    expect(plain).toHaveLength(Math.ceil((size + 4) / 2));
    expect(plain.every((line) => [...line].length === size + 4)).toBe(true);
    // Row 0 of the finder pattern is dark from x=0 to 6, and row 1 is dark at its edges.
    expect([...plain[1]!].slice(2, 9).join("")).toBe("█▀▀▀▀▀█");
    const colored = renderQr(code, { color: true }).split("\n");
    expect(colored[0]).toMatch(/^\x1b\[30;107m {25}\x1b\[0m$/);
  });
});
