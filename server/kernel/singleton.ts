// Next.js bundles instrumentation.ts and each route apart, so a module-level variable can exist
// once per bundle: process-wide state lives on globalThis (and survives dev hot reloads).
export function processSingleton<T>(name: string, create: () => T): T {
  const key = Symbol.for(`relay.${name}`);
  const store = globalThis as unknown as Record<symbol, T | undefined>;
  store[key] ??= create();
  return store[key];
}
