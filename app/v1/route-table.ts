// The /v1 route files the production server (scripts/start.mjs) answers before Next's router,
// by exact path (server/transports/http/fast-routes.ts): the same handlers, on a web Request built from
// Node's. Every route here answers a JSON envelope read whole. Left to Next: /v1/listen (a
// stream held open), /v1/files (a download streams a file of up to the upload cap),
// /v1/openapi.json and unknown paths (the catch-all's 404). tests/fast-routes.test.ts checks
// that this table names every other route file under app/v1 at its own path.
import type { RouteModule } from "@/server/transports/http/fast-routes";
import * as audioMessages from "./audio-messages/route";
import * as capacity from "./capacity/route";
import * as chats from "./chats/route";
import * as chatsPause from "./chats/pause/route";
import * as chatsResume from "./chats/resume/route";
import * as lines from "./lines/route";
import * as messages from "./messages/route";
import * as outbox from "./outbox/route";
import * as outboxApprove from "./outbox/approve/route";
import * as outboxReject from "./outbox/reject/route";
import * as pools from "./pools/route";
import * as reactions from "./reactions/route";
import * as receipts from "./receipts/route";
import * as sandbox from "./sandbox/route";
import * as typing from "./typing/route";
import * as webhookDeliveries from "./webhooks/deliveries/route";
import * as webhookResend from "./webhooks/deliveries/resend/route";
import * as webhookDisable from "./webhooks/disable/route";
import * as webhookEnable from "./webhooks/enable/route";
import * as webhookRotate from "./webhooks/rotate-secret/route";
import * as webhooks from "./webhooks/route";
import * as mcp from "../api/mcp/route";

export const V1_FAST_ROUTES: Readonly<Record<string, RouteModule>> = {
  "/v1/audio-messages": audioMessages,
  "/v1/capacity": capacity,
  "/v1/chats": chats,
  "/v1/chats/pause": chatsPause,
  "/v1/chats/resume": chatsResume,
  "/v1/lines": lines,
  "/v1/messages": messages,
  "/v1/outbox": outbox,
  "/v1/outbox/approve": outboxApprove,
  "/v1/outbox/reject": outboxReject,
  "/v1/pools": pools,
  "/v1/reactions": reactions,
  "/v1/receipts": receipts,
  "/v1/sandbox": sandbox,
  "/v1/typing": typing,
  "/v1/webhooks": webhooks,
  "/v1/webhooks/deliveries": webhookDeliveries,
  "/v1/webhooks/deliveries/resend": webhookResend,
  "/v1/webhooks/disable": webhookDisable,
  "/v1/webhooks/enable": webhookEnable,
  "/v1/webhooks/rotate-secret": webhookRotate,
};

/** Other JSON routes the production server answers before Next: the MCP server (stateless, JSON answers). */
export const OTHER_FAST_ROUTES: Readonly<Record<string, RouteModule>> = {
  "/api/mcp": mcp,
};
