import type { Operation } from "./operation";
import { LINE_OPERATIONS } from "./lines/line-operations";
import { MESSAGE_OPERATIONS } from "./messaging/message-operations";
import { OUTBOX_OPERATIONS } from "./messaging/outbox-operations";
import { WEBHOOK_OPERATIONS } from "./webhooks/webhook-operations";

/** Every /v1 operation by ID (the client library's method IDs): each area declares its own. */
export const OPERATIONS = { ...LINE_OPERATIONS, ...MESSAGE_OPERATIONS, ...OUTBOX_OPERATIONS, ...WEBHOOK_OPERATIONS };

export const OPERATION_LIST: readonly Operation[] = Object.values(OPERATIONS);
