// The standalone tree and the tests run this same bundle. The server's external packages (they
// load WebAssembly or native files from their own folders) resolve from node_modules above `outfile`.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

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
    // Bundled CommonJS still calls require() and reads __dirname (@next/env): give it the bundle's.
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
