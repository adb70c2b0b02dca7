// npm run lint:shape - the size rules of hand-written production code (docs/development.md,
// "Shape"): no file over 400 lines, and comment lines at most 9% of non-blank lines.
import { productionFiles } from "./production-files.mjs";

const MAX_LINES = 400;
const MAX_COMMENT_SHARE = 0.09;
const files = productionFiles().filter(({ file }) => /\.(ts|tsx|mjs|cjs|js)$/.test(file));

function measure(text) {
  let comments = 0;
  let lines = 0;
  let inBlock = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    lines++;
    if (inBlock) {
      comments++;
      if (line.includes("*/")) inBlock = false;
    } else if (line.startsWith("//")) comments++;
    else if (line.startsWith("/*") || line.startsWith("{/*")) {
      comments++;
      if (!line.includes("*/")) inBlock = true;
    }
  }
  return { comments, lines };
}

const tooLong = [];
const byFolder = new Map();
let comments = 0;
let lines = 0;
for (const { file, text } of files) {
  const total = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  if (total > MAX_LINES) tooLong.push(`${file}: ${total} lines`);
  const m = measure(text);
  comments += m.comments;
  lines += m.lines;
  const folder = file.split("/").slice(0, file.startsWith("server/") || file.startsWith("packages/") ? 2 : 1).join("/");
  const f = byFolder.get(folder) ?? { comments: 0, lines: 0 };
  f.comments += m.comments;
  f.lines += m.lines;
  byFolder.set(folder, f);
}

const pct = (c, n) => `${((100 * c) / Math.max(n, 1)).toFixed(1)}%`;
if (process.argv.includes("--folders")) {
  for (const [folder, f] of [...byFolder].sort((a, b) => b[1].comments / b[1].lines - a[1].comments / a[1].lines)) {
    console.log(`${pct(f.comments, f.lines).padStart(6)}  ${String(f.comments).padStart(5)} / ${String(f.lines).padEnd(6)} ${folder}`);
  }
}
const share = comments / Math.max(lines, 1);
console.log(`${files.length} files; comment lines ${comments} of ${lines} non-blank: ${pct(comments, lines)} (at most ${MAX_COMMENT_SHARE * 100}%)`);
for (const line of tooLong) console.log(`over ${MAX_LINES} lines: ${line}`);
if (tooLong.length > 0 || share > MAX_COMMENT_SHARE) process.exit(1);
