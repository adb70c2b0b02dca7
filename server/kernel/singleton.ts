// Process-wide state. Next.js bundles instrumentation.ts and each route separately, so a plain
// module-level variable can exist once per bundle: the database, change versions and caches
// must live on globalThis to be one per process (and to survive dev hot reloads).
export function processSingleton<T>(name: string, create: () => T): T {
  const key = Symbol.for(`relay.${name}`);
  const store = globalThis as unknown as Record<symbol, T | undefined>;
  store[key] ??= create();
  return store[key];
}
