// The operator CLI (scripts/admin.ts) as one ES module: what the standalone tree ships
// (prepare-standalone.mjs) and what the tests run (tests/global-setup.ts), so both run the
// same artifact. Packages the server keeps external (they load WebAssembly or native files
// from their own folders) stay external here too: they resolve from the node_modules above
// `outfile`.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** Bundles scripts/admin.ts of the repository at `root` into `outfile`; returns the packages left external. */
export async function bundleAdmin(root, outfile) {
  const { default: configFor } = await import(pathToFileURL(path.join(root, "next.config.mjs")).href);
  const nextConfig = typeof configFor === "function" ? await configFor("phase-production-build", {}) : configFor;
  // esbuild comes with tsx (the CLI's runner in development); resolved through it, not hoisting.
  const require = createRequire(path.join(root, "package.json"));
  const esbuild = require(require.resolve("esbuild", { paths: [path.dirname(require.resolve("tsx/package.json"))] }));
  const external = nextConfig.serverExternalPackages ?? [];
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["scripts/admin.ts"],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external,
    // CommonJS dependencies bundled into an ES module still call require(), and some read
    // __dirname (@next/env, which the CLI loads .env files with): the bundle's folder.
    banner: {
      js: [
        "import { createRequire as __relayCreateRequire } from 'node:module';",
        "import { fileURLToPath as __relayFileURLToPath } from 'node:url';",
        "const require = __relayCreateRequire(import.meta.url);",
        "const __relayFilename = __relayFileURLToPath(import.meta.url);",
        "const __relayDirname = __relayFileURLToPath(new URL('.', import.meta.url));",
      ].join(" "),
    },
    define: { __dirname: "__relayDirname", __filename: "__relayFilename" },
    legalComments: "none",
    logLevel: "warning",
  });
  return external;
}
