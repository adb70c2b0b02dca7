// The import rules of the production code, checked in CI (`npm run lint:deps`, .ci/run; see
// docs/development.md, "Import rules", and docs/architecture.md, "Floors").
// The floors, bottom first. A floor is a list of folders and every folder is on exactly one. An
// import points down, or sideways to a folder listed before it on its floor: so no two folders
// ever import each other.
const FLOORS = [
  ["client library", "^packages/client/src/"],
  ["kernel", "^server/kernel/"],
  ["data", "^server/generated/", "^server/db/", "^server/storage/", "^server/backup/", "^server/observability/", "^server/audio/", "^server/events/", "^server/cache/"],
  ["platform", "^server/http-out/", "^server/platform/", "^server/webhooks/"],
  ["policy", "^server/policy/"],
  ["wire", "^server/wire/"],
  ["write path", "^server/write/", "^server/messages/"],
  ["outbox", "^server/outbox/"],
  ["services", "^server/services/"],
  ["engine", "^server/engine/", "^inngest/"],
  ["transports", "^server/transports/"],
  ["boot", "^server/boot/"],
  ["pages", "^components/", "^app/", "^instrumentation\\.ts$"],
];
const either = (patterns) => patterns.map((p) => `(${p})`).join("|");
const folders = FLOORS.flatMap(([floor, ...paths]) => paths.map((path) => ({ floor, path, name: path.replace(/^\^|\/$|\\|\$$/g, "") })));
const upward = folders.slice(0, -1).map(({ floor, path, name }, i) => ({
  name: `not-up-from-${name.replace(/\W+/g, "-")}`,
  severity: "error",
  comment: `${name} (${floor}) imports only from the floors below and the folders before it on its floor.`,
  from: { path },
  to: { path: either(folders.slice(i + 1).map((f) => f.path)) },
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
      name: "on-a-floor",
      severity: "error",
      comment: "Every folder of server/ and inngest/ is on a floor (FLOORS): add a new one there.",
      from: {},
      to: { path: "^(server|inngest)/", pathNot: either(folders.map((f) => f.path)) },
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
      to: { path: "^(server/engine|inngest)/" },
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
