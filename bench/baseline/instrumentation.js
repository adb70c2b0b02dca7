// The baseline app has no start-up work of its own (without this file the build would pick up the
// repository root's instrumentation.ts).
export function register() {}
