// The shape of the production code, checked in CI (`npm run lint:deps`, .ci/run): rules that
// hold, plus .dependency-cruiser-known-violations.json, the violations that were there when the
// rules came (the delivery engine's import circle, issue 24). A new violation fails; a known
// one that is fixed leaves the list with `npm run lint:deps:baseline`. See docs/development.md.
// The floors of server/, bottom to top (docs/development.md, "Layout"): an import only ever
// points down or sideways. A module in no floor is unchecked (app/, components/, inngest/ and
// scripts/ sit above them all).
const FLOORS = [
  ["kernel", "^server/kernel/", "^server/observability/(log|heartbeats|context)\\.ts$", "^server/platform/(about|about-types)\\.ts$", "^server/platform/[^/]+/(about|error-codes)\\.ts$"],
  ["data", "^server/db/", "^server/generated/", "^server/storage/", "^server/audio/", "^server/events/", "^server/cache/", "^server/wire/", "^server/observability/(metrics|line-counts)\\.ts$"],
  ["platform", "^server/platform/", "^server/webhooks/", "^server/http-out/"],
  ["write path", "^server/write/", "^server/messages/"],
  ["outbox", "^server/outbox/"],
  ["services", "^server/services/", "^server/observability/health\\.ts$"],
  ["engine", "^server/engine/"],
  ["transports", "^server/transports/"],
  ["boot", "^server/boot/"],
];
const either = (patterns) => patterns.map((p) => `(${p})`).join("|");
const upward = FLOORS.slice(0, -1).map(([name, ...patterns], i) => ({
  name: `no-upward-from-${name.replace(/\W+/g, "-")}`,
  severity: "error",
  comment: `${name} is below ${FLOORS.slice(i + 1).map(([n]) => n).join(", ")}: it imports none of them.`,
  from: { path: either(patterns) },
  // A file in this floor or below (a pure-data file inside a higher folder) is no upward import.
  to: { path: either(FLOORS.slice(i + 1).flatMap(([, ...p]) => p)), pathNot: either(FLOORS.slice(0, i + 1).flatMap(([, ...p]) => p)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle: the modules in it can only be understood (and loaded) together.",
      from: {},
      to: { circular: true },
    },
    {
      name: "server-not-to-app",
      severity: "error",
      comment: "server/ is below the Next.js pages and route files: it never imports them.",
      from: { path: "^server/" },
      to: { path: "^(app|components)/" },
    },
    {
      name: "provider-folders-apart",
      severity: "error",
      comment: "A provider's folder uses the shared platform code, never another provider's folder.",
      from: { path: "^server/platform/([^/]+)/" },
      to: { path: "^server/platform/[^/]+/", pathNot: "^server/platform/$1/" },
    },
    {
      name: "services-not-to-runners",
      severity: "error",
      comment: "Services fire signals and runners subscribe: no service imports a runner.",
      from: { path: "^server/services/" },
      to: { path: "^server/engine/" },
    },
    {
      name: "production-not-to-tests",
      severity: "error",
      comment: "Production code never imports a test, a test helper or a fake.",
      from: { pathNot: "\\.test\\.ts$|^tests/|^e2e/" },
      to: { path: "\\.test\\.ts$|^tests/|^e2e/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^server/generated/|\\.test\\.ts$|\\.check\\.ts$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
