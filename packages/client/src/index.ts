// @relay/client: a typed client for the Relay /v1 API and webhook verification.
export { Relay, buildUrl, parseRetryAfter, type ListenOptions, type ListenSession, type Page, type RelayOptions, type RequestOptions } from "./client.js";
export * from "./errors.js";
export * from "./generated.js";
export type { File as FileObject } from "./generated.js";
export * from "./webhooks.js";
export { sandboxSmsLink } from "./sandbox.js";
