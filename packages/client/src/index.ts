export { Relay, buildUrl, parseRetryAfter, type OperationInput, type OperationResult } from "./client.js";
export type { ListenOptions, ListenSession, Page, RelayOptions, RequestOptions } from "./options.js";
export * from "./errors.js";
export * from "./generated.js";
export type { File as FileObject } from "./generated.js";
export * from "./webhooks.js";
export { sandboxSmsLink } from "./sandbox.js";
