#!/usr/bin/env node
// The `relay` command line (see run.ts); `relay --help` lists the commands.
import { runCli } from "./run.js";
import { colorWanted } from "./ui.js";

const abort = new AbortController();
process.once("SIGINT", () => abort.abort());
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stdin: process.stdin,
  signal: abort.signal,
  color: colorWanted(process.env, process.stdout.isTTY),
  interactive: process.stderr.isTTY === true && process.env.TERM !== "dumb",
}).catch((err: unknown) => {
  process.stderr.write(`Unexpected error: ${err instanceof Error ? err.stack : String(err)}\n`);
  return 70;
});
process.exitCode = code;
