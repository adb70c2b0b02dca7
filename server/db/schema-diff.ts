import { readFile } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { log } from "../kernel/log";
import { applyMigrations, readMigrations } from "./migrations";
import { pgliteRunner } from "./runners";

// The SQL that would bring a database built from prisma/migrations up to prisma/schema.prisma,
// computed offline by Prisma's WebAssembly schema engine against a scratch in-memory PGlite.
// Empty when the migrations folder is up to date.

const SCHEMA_PATH = path.resolve("prisma", "schema.prisma");

interface SchemaEngine {
  diff(params: unknown): Promise<{ exitCode: number; stdout: string | null }>;
}

type WasmBindings = {
  __wbg_set_wasm(exports: unknown): void;
  SchemaEngine: { new: (options: unknown, log: (line: string) => void, adapter: unknown) => Promise<SchemaEngine> };
};

async function loadSchemaEngine(pglite: PGlite, schemaText: string): Promise<SchemaEngine> {
  const bg = (await import("@prisma/schema-engine-wasm/schema_engine_bg")) as unknown as WasmBindings;
  const wasmPath = path.resolve("node_modules", "@prisma", "schema-engine-wasm", "schema_engine_bg.wasm");
  const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
    "./schema_engine_bg.js": bg as unknown as WebAssembly.ModuleImports,
  });
  const exports = instance.exports as { __wbindgen_start(): void };
  bg.__wbg_set_wasm(exports);
  exports.__wbindgen_start();
  return bg.SchemaEngine.new(
    { datamodels: [[SCHEMA_PATH, schemaText]] },
    (line: string) => log().debug(line),
    bindMigrationAwareSqlAdapterFactory(new PrismaPGlite(pglite)),
  );
}

export async function pendingSchemaSql(): Promise<string> {
  const schemaText = await readFile(SCHEMA_PATH, "utf8");
  const scratch = await PGlite.create();
  try {
    await applyMigrations(pgliteRunner(scratch), await readMigrations().catch(() => []));
    const engine = await loadSchemaEngine(scratch, schemaText);
    const files = [{ path: SCHEMA_PATH, content: schemaText }];
    const result = await engine.diff({
      from: { tag: "schemaDatasource", files, configDir: path.dirname(SCHEMA_PATH) },
      to: { tag: "schemaDatamodel", files },
      script: true,
      exitCode: null,
      shadowDatabaseUrl: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    const sql = (result.stdout ?? "").trim();
    return /^-- This is an empty migration\.?$/.test(sql) ? "" : sql;
  } finally {
    await scratch.close();
  }
}
