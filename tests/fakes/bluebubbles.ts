/**
 * Scripted fake of BlueBubbles Server v1.9.9 (BlueBubblesApp/bluebubbles-server, master f2e22862),
 * for tests. A real node:http server on 127.0.0.1 shaped like the real server's source, bugs included.
 *
 * Source map (B/ = packages/server/src/server/, V1/ = B/api/http/api/v1/):
 *  - routing, per-route middleware order (auth → Private API check → validators → controller): V1/httpRoutes.ts
 *  - auth: V1/middleware/authMiddleware.ts; error envelope: V1/responses/{errors,success,index}.ts and
 *    V1/middleware/errorMiddleware.ts (non-HTTPError → 500 "An unhandled error has occurred!")
 *  - validation messages: validatorjs 3.22 (V1/validators/*.ts rules), incl. the unknown rule `number`
 *    used by GET /webhook?id= (throws → 500)
 *  - sends: V1/routers/messageRouter.ts, B/api/interfaces/messageInterface.ts, B/api/apple/{actions,scripts}.ts,
 *    B/managers/outgoingMessageManager/messagePromise.ts, B/databases/imessage/pollers/MessagePoller.ts, B/index.ts
 *  - serialization: B/api/serializers/{Message,Attachment,Chat,Handle}Serializer.ts
 *  - webhooks: V1/routers/webhookRouter.ts, V1/validators/webhookValidator.ts, B/databases/server/index.ts,
 *    B/services/webhookService/index.ts, B/api/http/constants.ts
 *
 * Everything the fake cannot know (what Messages.app writes into chat.db, AppleScript error texts) is
 * marked "inferred" below.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";

// ------------------------------------------------------------------------------------------------
// Public types
// ------------------------------------------------------------------------------------------------

export interface FakeBBOptions {
  password?: string;
  privateApi?: boolean;
  helperConnected?: boolean;
  osVersion?: string;
  /** The Apple ID Messages is signed in with on the fake Mac (server info's detected_imessage). */
  appleId?: string;
  deliver?: (url: string, body: { type: string; data: unknown }) => Promise<void>;
  port?: number;
}

/** A row of chat.db's handle table, serialized (HandleSerializer, non-notification shape). */
interface BBHandleRecord {
  originalROWID: number;
  address: string;
  service: string;
  uncanonicalizedId: string | null;
  country: string | null;
}

/** A chat (ChatSerializer, non-notification shape, participants included). */
interface BBChatRecord {
  originalROWID: number;
  guid: string;
  /** 43 = group, 45 = 1:1 */
  style: number;
  chatIdentifier: string;
  isArchived: boolean;
  displayName: string | null;
  participants: BBHandleRecord[];
  isFiltered: boolean;
  groupId: string | null;
  properties: Record<string, unknown> | null;
  lastAddressedHandle: string | null;
}

/** How a chat appears inside a message's `chats` (no participants). */
type BBChatSummary = Omit<BBChatRecord, "participants">;

/** AttachmentSerializer, non-notification shape with metadata. */
interface BBAttachmentRecord {
  originalROWID: number;
  guid: string;
  uti: string | null;
  mimeType: string | null;
  transferName: string;
  totalBytes: number;
  transferState: number;
  isOutgoing: boolean;
  hideAttachment: boolean;
  isSticker: boolean;
  originalGuid: string;
  hasLivePhoto: boolean;
  height: number;
  width: number;
  /** absent (undefined) for non-media files, as getAttachmentMetadata returns undefined for them */
  metadata?: Record<string, unknown>;
}

/**
 * A message as the "Mac database" holds it, in MessageSerializer's full (non-notification) shape with
 * the parsed attributedBody. Projections (webhooks, query results…) are derived from this record.
 */
interface BBMessageRecord {
  originalROWID: number;
  guid: string;
  text: string | null;
  attributedBody: unknown[] | null;
  handle: BBHandleRecord | null;
  handleId: number;
  otherHandle: number;
  attachments: BBAttachmentRecord[];
  subject: string | null;
  error: number;
  dateCreated: number;
  dateRead: number | null;
  dateDelivered: number | null;
  isDelivered: boolean;
  isFromMe: boolean;
  hasDdResults: boolean;
  isArchived: boolean;
  itemType: number;
  groupTitle: string | null;
  groupActionType: number;
  balloonBundleId: string | null;
  associatedMessageGuid: string | null;
  associatedMessageType: string | null;
  expressiveSendStyleId: string | null;
  threadOriginatorGuid: string | null;
  hasPayloadData: boolean;
  // non-notification extras
  country: string | null;
  isDelayed: boolean;
  isAutoReply: boolean;
  isSystemMessage: boolean;
  isServiceMessage: boolean;
  isForward: boolean;
  threadOriginatorPart: string | null;
  isCorrupt: boolean;
  datePlayed: number | null;
  cacheRoomnames: string | null;
  isSpam: boolean;
  isExpired: boolean;
  timeExpressiveSendPlayed: number | null;
  isAudioMessage: boolean;
  replyToGuid: string | null;
  shareStatus: number;
  shareDirection: number;
  wasDeliveredQuietly: boolean;
  didNotifyRecipient: boolean;
  chats: BBChatSummary[];
  messageSummaryInfo: unknown;
  payloadData: unknown;
  dateEdited: number | null;
  dateRetracted: number | null;
  partCount: number;
}

interface BBWebhookRow {
  id: number;
  url: string;
  events: string[];
  /** epoch ms (the HTTP API renders it as an ISO string, like TypeORM's CreateDateColumn) */
  created: number;
}

interface BBRequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

type BBFailure = "not-registered" | "unknown-chat" | "match-timeout" | "private-api" | "attachment-too-large";

interface BBFaults {
  /** Delay before answering a send (text/attachment/react/new chat), ms. */
  sendDelayMs: number;
  /** Next N sends: the message IS created (and webhooks emitted) but the HTTP response never comes. */
  hangAfterSend: number;
  /** Next N sends: nothing is created and the response never comes (the tempGuid stays "queued"). */
  hangWithoutSend: number;
  /** Queue of failures, one consumed per send. */
  failNext: BBFailure[];
  /** Every request answers this instead. */
  mode: null | "html" | "garbage" | "error-envelope" | "huge" | "503";
  /** Webhooks for our own sends emitted before the HTTP response (default true). */
  webhooksBeforeResponse: boolean;
  /** The MessagePromise match timeout (real: 2 min for texts; used by "match-timeout"). Default 120000. */
  matchTimeoutMs: number;
}

interface BBPrivateApiCall {
  type: "start-typing" | "stop-typing" | "mark-read" | "mark-unread";
  chatGuid: string;
  at: number;
}

export interface FakeBlueBubbles {
  url: string;
  password: string;
  close(): Promise<void>;
  restart(): Promise<void>;
  messages: BBMessageRecord[];
  chats: Map<string, BBChatRecord>;
  webhooks: BBWebhookRow[];
  requests: BBRequestRecord[];
  /** Extra: bytes of every attachment, by attachment GUID. */
  attachmentData: Map<string, Uint8Array>;
  /** Extra: every webhook event the server emitted (whether or not anyone was subscribed). */
  emitted: { type: string; data: unknown; at: number }[];
  /** Extra: Private API helper calls (typing/read). DELETE /typing records "start-typing" (1.9.9 bug). */
  privateApiCalls: BBPrivateApiCall[];
  /** Extra: addresses registered on iMessage; null = every address is. Used by availability and sends. */
  imessageRegistered: Set<string> | null;
  receive(opts: ReceiveOptions): BBMessageRecord;
  emit(type: string, data: unknown): Promise<void>;
  markDelivered(guid: string): Promise<void>;
  /** Extra: the recipient read our message (dateRead) → updated-message. */
  markRead(guid: string): Promise<void>;
  /** Extra: the helper reports the other side typing (typing-indicator; group chats ignored; deduped). */
  remoteTyping(chatGuid: string, display: boolean): Promise<void>;
  /** Extra: resolves when every webhook delivery started so far has been handed to `deliver`. */
  idle(): Promise<void>;
  setPrivateApi(on: boolean): void;
  setHelperConnected(on: boolean): void;
  faults: BBFaults;
}

interface ReceiveOptions {
  from: string;
  text?: string;
  chatGuid?: string;
  isFromMe?: boolean;
  attachment?: { name: string; mimeType: string; bytes: Uint8Array; uti?: string };
  associatedMessageGuid?: string;
  associatedMessageType?: string;
  threadOriginatorGuid?: string;
  dateCreated?: number;
  emit?: boolean;
}

// ------------------------------------------------------------------------------------------------
// Constants from the source
// ------------------------------------------------------------------------------------------------

/** B/api/http/constants.ts webhookEventOptions (values). */
const BB_WEBHOOK_EVENTS = [
  "*",
  "new-message",
  "updated-message",
  "message-send-error",
  "group-name-change",
  "group-icon-changed",
  "group-icon-removed",
  "participant-removed",
  "participant-added",
  "participant-left",
  "chat-read-status-changed",
  "typing-indicator",
  "scheduled-message-error",
  "server-update",
  "new-server",
  "new-findmy-location",
  "hello-world",
  "incoming-facetime",
  "ft-call-status-changed",
  "imessage-alias-removed",
  "theme-backup-created",
  "theme-backup-updated",
  "theme-backup-deleted",
  "settings-backup-created",
  "settings-backup-updated",
  "settings-backup-deleted",
] as const;

/** MessageInterface.possibleReactions */
const POSSIBLE_REACTIONS = [
  "love", "like", "dislike", "laugh", "emphasize", "question",
  "-love", "-like", "-dislike", "-laugh", "-emphasize", "-question",
];

/** B/api/apple/mappings.ts */
const REACTION_TEXT: Record<string, string> = {
  love: "Loved", like: "Liked", dislike: "Disliked", laugh: "Laughed at", emphasize: "Emphasized", question: "Questioned",
};
const NEGATIVE_REACTION_TEXT: Record<string, string> = {
  "-love": "Removed a heart", "-like": "Removed a like", "-dislike": "Removed a dislike",
  "-laugh": "Removed a laugh", "-emphasize": "Removed an exclamation", "-question": "Removed a question mark",
};

const PAPI_SETUP_MESSAGE =
  "Please make sure you have completed the setup for the Private API, and your helper is connected!";
const BAD_REQUEST_MESSAGE = "You've made a bad request! Please check your request params & body";
const INVISIBLE_MEDIA_CHAR = "\ufffc";
/** formidable v1 maxFileSize as configured in B/api/http/index.ts (1 GiB) */
const MAX_FILE_SIZE = 1024 * 1024 * 1024;

// ------------------------------------------------------------------------------------------------
// Small helpers
// ------------------------------------------------------------------------------------------------

const HANG = Symbol("hang");

interface JsonReply {
  status: number;
  json?: unknown;
  text?: string;
  html?: string;
  bytes?: { data: Uint8Array; mime: string };
  headers?: Record<string, string>;
  /** runs after the response has been written (webhooks after response) */
  after?: () => Promise<void>;
}
type Reply = JsonReply | typeof HANG;

class HttpError extends Error {
  constructor(public status: number, public body: Record<string, unknown>) {
    super(String(body.message ?? status));
  }
}

const envelope = (status: number, message: string, type: string, error: string, data?: unknown) => {
  const body: Record<string, unknown> = { status, message, error: { type, message: error } };
  if (data !== undefined) body.data = data;
  return body;
};
const badRequest = (error: string) => new HttpError(400, envelope(400, BAD_REQUEST_MESSAGE, "Validation Error", error));
const notFound = (error: string) =>
  new HttpError(404, envelope(404, "The requested resource was not found", "Database Error", error));
const unauthorized = (error?: string) =>
  new HttpError(
    401,
    envelope(401, "You are not authorized to access this resource", "Authentication Error", error ?? "Unauthorized"),
  );
const iMessageError = (p: { message?: string; error?: string; data?: unknown }) =>
  new HttpError(
    500,
    envelope(500, p.message ?? "iMessage has encountered an error", "iMessage Error", p.error ?? "Unknown iMessage Error", p.data),
  );
const serverError = (error: string) =>
  new HttpError(500, envelope(500, "The server has encountered an error", "Server Error", error));
/** ErrorMiddleware for anything that is not an HTTPError (createServerErrorResponse). */
const unhandled = (error: string) =>
  new HttpError(500, envelope(500, "An unhandled error has occurred!", "Server Error", error));

const success = (message: string, data?: unknown, metadata?: unknown): JsonReply => {
  const json: Record<string, unknown> = { status: 200, message };
  if (data !== undefined) json.data = data;
  if (metadata !== undefined) json.metadata = metadata;
  return { status: 200, json };
};

const newGuid = () => randomUUID().toUpperCase();

/** helpers/utils.ts isNotEmpty/isEmpty */
function isNotEmpty(value: unknown, trim = true): boolean {
  if (!value) return false;
  if (typeof value === "string") return (trim ? value.trim() : value).length > 0;
  if (Array.isArray(value)) return trim ? value.filter((i) => isNotEmpty(i)).length > 0 : value.length > 0;
  if (typeof value === "object") return Object.keys(value as object).length > 0;
  return true;
}
const isEmpty = (value: unknown) => !isNotEmpty(value);

/** helpers/utils.ts sanitizeStr */
function sanitizeStr(val: string | null): string | null {
  if (!val) return val;
  return val.split(INVISIBLE_MEDIA_CHAR).join("").trim();
}

/**
 * helpers/utils.ts getiMessageAddressFormat (slugify, then E.164 via libphonenumber with region US).
 * libphonenumber is approximated: "+" + digits; without "+", "+1" is prepended (so "15551234567"
 * becomes "+115551234567", as the real code does).
 */
function bbAddressFormat(address: string, preSlugged = false): string {
  let addr = address ?? "";
  if (!preSlugged) {
    const slugRegex = addr.includes("@") ? /[^\w@.-_]+/g : /[^\d+]+/g;
    addr = addr.toLowerCase().replace(/\s+/g, "").replace(slugRegex, "").trim();
  }
  if (addr.includes("@")) return addr;
  if (!addr.startsWith("+")) addr = `+1${addr}`;
  return `+${addr.replace(/[^\d]/g, "")}`;
}

const EXT_TYPES: Record<string, { mime: string; uti: string }> = {
  png: { mime: "image/png", uti: "public.png" },
  jpg: { mime: "image/jpeg", uti: "public.jpeg" },
  jpeg: { mime: "image/jpeg", uti: "public.jpeg" },
  gif: { mime: "image/gif", uti: "com.compuserve.gif" },
  heic: { mime: "image/heic", uti: "public.heic" },
  heif: { mime: "image/heif", uti: "public.heif" },
  tif: { mime: "image/tiff", uti: "public.tiff" },
  tiff: { mime: "image/tiff", uti: "public.tiff" },
  webp: { mime: "image/webp", uti: "org.webmproject.webp" },
  caf: { mime: "audio/x-caf", uti: "com.apple.coreaudio-format" },
  mp3: { mime: "audio/mpeg", uti: "public.mp3" },
  m4a: { mime: "audio/x-m4a", uti: "com.apple.m4a-audio" },
  wav: { mime: "audio/wav", uti: "com.microsoft.waveform-audio" },
  aac: { mime: "audio/aac", uti: "public.aac-audio" },
  mp4: { mime: "video/mp4", uti: "public.mpeg-4" },
  mov: { mime: "video/quicktime", uti: "com.apple.quicktime-movie" },
  pdf: { mime: "application/pdf", uti: "com.adobe.pdf" },
  txt: { mime: "text/plain", uti: "public.plain-text" },
  vcf: { mime: "text/vcard", uti: "public.vcard" },
};
function typeFromName(name: string): { mime: string | null; uti: string } {
  const ext = (name.split(".").pop() ?? "").toLowerCase();
  const t = EXT_TYPES[ext];
  return t ? { mime: t.mime, uti: t.uti } : { mime: null, uti: "public.data" };
}
function utiFromMime(mime: string): string {
  for (const t of Object.values(EXT_TYPES)) if (t.mime === mime) return t.uti;
  return "public.data";
}

/** PNG width/height from IHDR, for attachment metadata (real: mdls/nativeImage). */
function imageSize(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.length >= 24 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return { width: dv.getUint32(16), height: dv.getUint32(20) };
  }
  return null;
}

/** databases/imessage/helpers/utils.ts convertAudio/convertImage (names/mime after conversion). */
function conversionOf(a: BBAttachmentRecord): { mime: string; name: string; ext: string } | null {
  const mime = a.mimeType ?? "application/octet-stream";
  const conv = (target: string, ext: string, newMime: string) => {
    let newPath = a.transferName || a.guid;
    if (!newPath.endsWith(`.${target}`)) newPath = `${newPath}.${target}`;
    const name =
      target === "mp3" ? newPath.replace(`.${ext}`, ".mp3") : newPath.replace(new RegExp(`\\.${ext}$`), ".jpeg");
    return { mime: newMime, name, ext: target };
  };
  if (a.uti === "com.apple.coreaudio-format" || mime === "audio/x-caf") return conv("mp3", "caf", "audio/mp3");
  if (a.uti === "public.heic" || mime.startsWith("image/heic")) return conv("jpeg", "heic", "image/jpeg");
  if (a.uti === "public.heif" || mime.startsWith("image/heif")) return conv("jpeg", "heif", "image/jpeg");
  if (a.uti === "public.tiff" || mime.startsWith("image/tiff") || mime.endsWith("tif")) {
    return conv("jpeg", "tiff", "image/jpeg");
  }
  return null;
}

// ------------------------------------------------------------------------------------------------
// validatorjs (3.22) subset: required, present, string, numeric, min, max, in, array, boolean;
// unknown rules throw like validatorjs' missedRuleValidator.
// ------------------------------------------------------------------------------------------------

function getPath(obj: unknown, path: string): unknown {
  if (obj && typeof obj === "object" && Object.prototype.hasOwnProperty.call(obj, path)) {
    return (obj as Record<string, unknown>)[path];
  }
  let cur: unknown = obj;
  for (const k of path.split(".")) {
    if (cur && typeof cur === "object" && Object.prototype.hasOwnProperty.call(cur, k)) {
      cur = (cur as Record<string, unknown>)[k];
    } else return undefined;
  }
  return cur;
}

function validateInput(data: unknown, rules: Record<string, string>): void {
  const input = data && typeof data === "object" ? data : {};
  // expand "a.*.b" rules
  const expanded: [string, string[]][] = [];
  for (const [attr, ruleStr] of Object.entries(rules)) {
    if (attr.includes("*")) {
      const parent = attr.slice(0, attr.indexOf("*") - 1);
      const arr = getPath(input, parent);
      if (arr && typeof (arr as { length?: unknown }).length === "number") {
        for (let i = 0; i < (arr as unknown[]).length; i++) expanded.push([attr.replace("*", String(i)), ruleStr.split("|")]);
      }
    } else expanded.push([attr, ruleStr.split("|")]);
  }
  const required = (v: unknown) => v !== undefined && v !== null && String(v).replace(/\s/g, "").length > 0;
  for (const [attr, ruleList] of expanded) {
    const value = getPath(input, attr);
    const hasNumeric = ruleList.some((r) => r === "numeric" || r === "integer");
    const name = attr.replace(/[_[]/g, " ").replace(/]/g, "");
    for (const rule of ruleList) {
      const [ruleName = "", param = ""] = [rule.split(":")[0], rule.split(":").slice(1).join(":")];
      const implicit = ruleName === "required" || ruleName === "present";
      if (!Array.isArray(value) && !implicit && !required(value)) continue;
      const size = (): number =>
        Array.isArray(value)
          ? value.length
          : typeof value === "number"
            ? value
            : hasNumeric
              ? Number.parseFloat(String(value))
              : ((value as { length?: number } | null)?.length ?? Number.NaN);
      const numericType = typeof value === "number" || hasNumeric;
      let ok = true;
      let msg = `The ${name} attribute has errors.`;
      switch (ruleName) {
        case "required":
          ok = required(value);
          msg = `The ${name} field is required.`;
          break;
        case "present":
          ok = value !== undefined;
          msg = `The ${name} field must be present (but can be empty).`;
          break;
        case "string":
          ok = typeof value === "string";
          msg = `The ${name} must be a string.`;
          break;
        case "numeric": {
          const n = Number(value);
          ok = !Number.isNaN(n) && typeof value !== "boolean";
          msg = `The ${name} must be a number.`;
          break;
        }
        case "min":
          ok = size() >= Number(param);
          msg = numericType ? `The ${name} must be at least ${param}.` : `The ${name} must be at least ${param} characters.`;
          break;
        case "max":
          ok = size() <= Number(param);
          msg = numericType
            ? `The ${name} may not be greater than ${param}.`
            : `The ${name} may not be greater than ${param} characters.`;
          break;
        case "in": {
          const list = param.split(",");
          if (Array.isArray(value)) ok = value.every((v) => list.includes(v as string));
          else if (value) ok = list.includes(String(value));
          msg = `The selected ${name} is invalid.`;
          break;
        }
        case "array":
          ok = Array.isArray(value);
          break;
        case "boolean":
          ok = [true, false, 0, 1, "0", "1", "true", "false"].includes(value as never);
          break;
        default:
          throw new Error(`Validator \`${ruleName}\` is not defined!`);
      }
      if (!ok) throw badRequest(msg);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Body parsing (koa-body: json, urlencoded, text, multipart via formidable)
// ------------------------------------------------------------------------------------------------

interface UploadedFile {
  filename: string;
  contentType: string;
  data: Buffer;
}
interface ParsedBody {
  body: Record<string, unknown> | string | unknown[];
  files: Record<string, UploadedFile>;
  record: unknown;
  error?: string;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function parseMultipart(buf: Buffer, boundary: string): { fields: Record<string, unknown>; files: Record<string, UploadedFile> } {
  const fields: Record<string, unknown> = {};
  const files: Record<string, UploadedFile> = {};
  const delim = Buffer.from(`--${boundary}`);
  let pos = buf.indexOf(delim);
  while (pos !== -1) {
    let start = pos + delim.length;
    if (buf.subarray(start, start + 2).toString() === "--") break;
    if (buf.subarray(start, start + 2).toString() === "\r\n") start += 2;
    const next = buf.indexOf(delim, start);
    if (next === -1) break;
    let end = next;
    if (buf.subarray(end - 2, end).toString() === "\r\n") end -= 2;
    const part = buf.subarray(start, end);
    const headerEnd = part.indexOf("\r\n\r\n");
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString("utf8");
      const content = part.subarray(headerEnd + 4);
      const disp = /content-disposition:([^\r\n]*)/i.exec(headers)?.[1] ?? "";
      const name = /\bname="([^"]*)"/i.exec(disp)?.[1];
      const filename = /\bfilename="([^"]*)"/i.exec(disp)?.[1];
      const ctype = /content-type:\s*([^\r\n]*)/i.exec(headers)?.[1]?.trim() ?? "application/octet-stream";
      if (name !== undefined) {
        if (filename !== undefined) {
          files[name] = { filename, contentType: ctype, data: Buffer.from(content) };
        } else {
          const value = content.toString("utf8");
          const prev = fields[name];
          fields[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
        }
      }
    }
    pos = next;
  }
  return { fields, files };
}

function parseBody(req: IncomingMessage, raw: Buffer): ParsedBody {
  const method = (req.method ?? "GET").toUpperCase();
  const ctype = (req.headers["content-type"] ?? "").toLowerCase();
  if (!["POST", "PUT", "PATCH", "DELETE"].includes(method)) return { body: {}, files: {}, record: undefined };
  if (ctype.includes("multipart/form-data")) {
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(req.headers["content-type"] ?? "");
    const b = boundary?.[1] ?? boundary?.[2];
    if (!b) return { body: {}, files: {}, record: {}, error: "bad content-type header, no multipart boundary" };
    const { fields, files } = parseMultipart(raw, b.trim());
    const record: Record<string, unknown> = { ...fields };
    for (const [k, f] of Object.entries(files)) {
      record[k] = { filename: f.filename, size: f.data.length, contentType: f.contentType };
    }
    return { body: fields, files, record };
  }
  if (ctype.includes("json")) {
    const text = raw.toString("utf8");
    if (text.trim() === "") return { body: {}, files: {}, record: {} };
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed === null || typeof parsed !== "object") {
        return { body: {}, files: {}, record: text, error: "invalid JSON, only supports object and array" };
      }
      return { body: parsed as Record<string, unknown>, files: {}, record: parsed };
    } catch (e) {
      return { body: {}, files: {}, record: text, error: (e as Error).message };
    }
  }
  if (ctype.includes("application/x-www-form-urlencoded")) {
    const fields: Record<string, unknown> = {};
    for (const [k, v] of new URLSearchParams(raw.toString("utf8"))) fields[k] = v;
    return { body: fields, files: {}, record: fields };
  }
  if (ctype.startsWith("text/")) {
    const text = raw.toString("utf8");
    return { body: text, files: {}, record: text };
  }
  return { body: {}, files: {}, record: raw.length ? { bytes: raw.length } : undefined };
}

// ------------------------------------------------------------------------------------------------
// Default webhook delivery: axios.post(url, {type,data}) — fire-and-forget, errors ignored.
// The returned promise settles once the request has been written (not when the receiver answers).
// ------------------------------------------------------------------------------------------------

function httpDeliver(url: string, body: { type: string; data: unknown }): Promise<void> {
  return new Promise((resolve) => {
    try {
      const u = new URL(url);
      const payload = Buffer.from(JSON.stringify(body));
      const mod = u.protocol === "https:" ? https : http;
      const req = mod.request(
        u,
        {
          method: "POST",
          agent: false,
          headers: {
            Accept: "application/json, text/plain, */*",
            "Content-Type": "application/json",
            "Content-Length": String(payload.length),
            "User-Agent": "axios/1.7.2",
          },
        },
        (res) => res.resume(),
      );
      req.on("error", () => resolve());
      req.on("finish", () => resolve());
      req.end(payload);
    } catch {
      resolve();
    }
  });
}

// ------------------------------------------------------------------------------------------------
// The fake
// ------------------------------------------------------------------------------------------------

/** What most of the source's serializer calls pass; each call below states only what differs. */
const SER_DEFAULTS = {
  notification: false,
  includeChats: true,
  loadChatParticipants: false,
  parseAttributedBody: false,
  withAttachments: true,
  convert: true,
  loadMetadata: true,
} as const;

interface SerCfg {
  notification: boolean;
  includeChats: boolean;
  /** MessageSerializer.loadChatParticipants: fills chats[0].participants for group chats */
  loadChatParticipants: boolean;
  parseAttributedBody: boolean;
  withAttachments: boolean;
  convert: boolean;
  loadMetadata: boolean;
  enforceMaxSize?: boolean;
  /** GET /message/:guid?with=chats.participants preloads participants, so the serializer skips (and drops) them */
  participantsPreloaded?: boolean;
}

type SendKind = "text" | "attachment" | "chat-new" | "react";

type Outcome =
  | { kind: "sent"; record: BBMessageRecord; matched: boolean }
  | { kind: "timeout"; record: BBMessageRecord | null }
  | { kind: "error"; message: string; papi?: boolean };

class FakeBlueBubblesImpl implements FakeBlueBubbles {
  url = "";
  password: string;
  messages: BBMessageRecord[] = [];
  chats = new Map<string, BBChatRecord>();
  webhooks: BBWebhookRow[] = [];
  requests: BBRequestRecord[] = [];
  attachmentData = new Map<string, Uint8Array>();
  emitted: { type: string; data: unknown; at: number }[] = [];
  privateApiCalls: BBPrivateApiCall[] = [];
  imessageRegistered: Set<string> | null = null;
  faults: BBFaults = {
    sendDelayMs: 0,
    hangAfterSend: 0,
    hangWithoutSend: 0,
    failNext: [],
    mode: null,
    webhooksBeforeResponse: true,
    matchTimeoutMs: 120_000,
  };

  private privateApi: boolean;
  private helperConnected: boolean;
  private osVersion: string;
  private deliverFn: (url: string, body: { type: string; data: unknown }) => Promise<void>;
  private port: number;
  private server: http.Server | null = null;
  private generation = 0;
  private timers = new Set<{ t: NodeJS.Timeout; resolve: () => void }>();
  private sendCache = new Set<string>();
  private typingCache = new Set<string>();
  private typingEventCache = new Map<string, { lastSeen: number; lastValue: boolean }>();
  private pending = new Set<Promise<unknown>>();
  private handles = new Map<string, BBHandleRecord>();
  private rowids = { message: 0, chat: 0, handle: 0, attachment: 0, webhook: 0 };
  private computerId = `fake@Fake-Mac-${Math.random().toString(16).slice(2, 8)}`;

  private readonly appleId: string;

  constructor(opts: FakeBBOptions) {
    this.password = opts.password ?? "fake-pw";
    this.privateApi = opts.privateApi ?? true;
    this.helperConnected = opts.helperConnected ?? true;
    this.osVersion = opts.osVersion ?? "15.5";
    this.appleId = opts.appleId ?? "fake-owner@icloud.com";
    this.deliverFn = opts.deliver ?? httpDeliver;
    this.port = opts.port ?? 0;
  }

  // ---------------------------------------------------------------------------- lifecycle

  async listen(): Promise<void> {
    const server = http.createServer((req, res) => {
      void this.onRequest(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.generation++;
    for (const timer of this.timers) {
      clearTimeout(timer.t);
      timer.resolve();
    }
    this.timers.clear();
    // in-memory caches of the server process are gone after a restart
    this.sendCache.clear();
    this.typingCache.clear();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  async restart(): Promise<void> {
    if (this.server) await this.close();
    await this.listen();
  }

  setPrivateApi(on: boolean): void {
    this.privateApi = on;
  }

  setHelperConnected(on: boolean): void {
    this.helperConnected = on;
  }

  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  // ---------------------------------------------------------------------------- state helpers

  private get osMajor(): number {
    return Number.parseInt(this.osVersion.split(".")[0] ?? "0", 10) || 0;
  }

  private sleep(ms: number): Promise<boolean> {
    const gen = this.generation;
    if (ms <= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const entry = {
        t: setTimeout(() => {
          this.timers.delete(entry);
          resolve(gen === this.generation);
        }, ms),
        resolve: () => resolve(false),
      };
      this.timers.add(entry);
    });
  }

  private papiStatusError(): string | null {
    if (!this.privateApi) return "iMessage Private API is not enabled!";
    if (!this.helperConnected) return "iMessage Private API Helper is not connected!";
    return null;
  }

  private getHandle(address: string, service: string): BBHandleRecord {
    const svc = service === "any" ? "iMessage" : service;
    const key = `${svc}:${address}`;
    let h = this.handles.get(key);
    if (!h) {
      h = { originalROWID: ++this.rowids.handle, address, service: svc, uncanonicalizedId: null, country: "us" };
      this.handles.set(key, h);
    }
    return h;
  }

  private ensureChat(guid: string, participantAddresses: string[] = []): BBChatRecord {
    let chat = this.chats.get(guid);
    const service = guid.includes(";") ? (guid.split(";")[0] ?? "iMessage") : "iMessage";
    if (!chat) {
      const isGroup = guid.includes(";+;");
      const identifier = guid.includes(";") ? (guid.split(";").pop() ?? guid) : guid;
      chat = {
        originalROWID: ++this.rowids.chat,
        guid,
        style: isGroup ? 43 : 45,
        chatIdentifier: identifier,
        isArchived: false,
        displayName: isGroup ? null : "",
        participants: isGroup ? [] : [this.getHandle(identifier, service)],
        isFiltered: false,
        groupId: isGroup ? newGuid() : null,
        properties: null,
        lastAddressedHandle: null,
      };
      this.chats.set(guid, chat);
    }
    for (const a of participantAddresses) {
      if (!chat.participants.some((p) => p.address === a)) chat.participants.push(this.getHandle(a, service));
    }
    return chat;
  }

  /** Find the chat a send targets: exact GUID, else the normalized 1:1 GUID (messagePromise isSameChatGuid). */
  private findChat(chatGuid: string): BBChatRecord | undefined {
    const exact = this.chats.get(chatGuid);
    if (exact) return exact;
    if (chatGuid.includes(";-;")) {
      const [svc, addr = ""] = chatGuid.split(";-;");
      return this.chats.get(`${svc};-;${bbAddressFormat(addr)}`);
    }
    return undefined;
  }

  private chatSummary(chat: BBChatRecord): BBChatSummary {
    const { participants: _p, ...rest } = chat;
    return { ...rest };
  }

  private createMessage(p: {
    chat: BBChatRecord;
    isFromMe: boolean;
    sender?: BBHandleRecord | null;
    text: string | null;
    subject?: string | null;
    attachments?: { name: string; mime: string | null; uti: string; bytes: Uint8Array; outgoing: boolean }[];
    associatedMessageGuid?: string | null;
    associatedMessageType?: string | null;
    threadOriginatorGuid?: string | null;
    threadOriginatorPart?: string | null;
    effectId?: string | null;
    error?: number;
    isAudioMessage?: boolean;
    dateCreated?: number;
  }): BBMessageRecord {
    const { chat } = p;
    const isGroup = chat.style === 43;
    // chat.db: outgoing 1:1 messages carry the recipient's handle; outgoing group messages handle_id 0
    const handle = p.isFromMe ? (isGroup ? null : (chat.participants[0] ?? null)) : (p.sender ?? null);
    const attachments: BBAttachmentRecord[] = [];
    for (const a of p.attachments ?? []) {
      const guid = a.outgoing ? `at_0_${newGuid()}` : newGuid();
      const dims = a.mime?.startsWith("image") ? imageSize(a.bytes) : null;
      const rec: BBAttachmentRecord = {
        originalROWID: ++this.rowids.attachment,
        guid,
        uti: a.uti,
        mimeType: a.mime,
        transferName: a.name,
        totalBytes: a.bytes.length,
        transferState: 5,
        isOutgoing: a.outgoing,
        hideAttachment: false,
        isSticker: false,
        originalGuid: guid,
        hasLivePhoto: false,
        height: dims?.height ?? 0,
        width: dims?.width ?? 0,
      };
      const isMedia = /^(image|audio|video)/.test(a.mime ?? "") || a.uti === "com.apple.coreaudio-format";
      if (isMedia) rec.metadata = dims ? { height: dims.height, width: dims.width } : {};
      attachments.push(rec);
      this.attachmentData.set(guid, a.bytes);
    }
    const rawText =
      p.text !== null && p.text !== undefined
        ? attachments.length
          ? `${INVISIBLE_MEDIA_CHAR.repeat(attachments.length)}${p.text}`
          : p.text
        : attachments.length
          ? INVISIBLE_MEDIA_CHAR.repeat(attachments.length)
          : null;
    const attributedBody =
      rawText === null
        ? null
        : [
            {
              string: rawText,
              runs: [
                ...attachments.map((a, i) => ({
                  range: [i, 1],
                  attributes: { __kIMMessagePartAttributeName: i, __kIMFileTransferGUIDAttributeName: a.guid },
                })),
                ...(p.text
                  ? [
                      {
                        range: [attachments.length, p.text.length],
                        attributes: { __kIMMessagePartAttributeName: attachments.length },
                      },
                    ]
                  : []),
              ],
            },
          ];
    const now = p.dateCreated ?? Date.now();
    const rec: BBMessageRecord = {
      originalROWID: ++this.rowids.message,
      guid: newGuid(),
      text: sanitizeStr(rawText),
      attributedBody,
      handle,
      handleId: handle?.originalROWID ?? 0,
      otherHandle: 0,
      attachments,
      subject: p.subject ?? null,
      error: p.error ?? 0,
      dateCreated: now,
      dateRead: null,
      dateDelivered: null,
      // inferred: received rows have is_delivered=1, date_delivered=0; ours wait for markDelivered()
      isDelivered: !p.isFromMe,
      isFromMe: p.isFromMe,
      hasDdResults: false,
      isArchived: false,
      itemType: 0,
      groupTitle: null,
      groupActionType: 0,
      balloonBundleId: null,
      associatedMessageGuid: p.associatedMessageGuid ?? null,
      associatedMessageType: p.associatedMessageType ?? null,
      expressiveSendStyleId: p.effectId ?? null,
      threadOriginatorGuid: p.threadOriginatorGuid ?? null,
      hasPayloadData: false,
      country: null,
      isDelayed: false,
      isAutoReply: false,
      isSystemMessage: false,
      isServiceMessage: false,
      isForward: false,
      threadOriginatorPart: p.threadOriginatorPart ?? null,
      isCorrupt: false,
      datePlayed: null,
      cacheRoomnames: isGroup ? chat.chatIdentifier : null,
      isSpam: false,
      isExpired: false,
      timeExpressiveSendPlayed: null,
      isAudioMessage: p.isAudioMessage ?? false,
      replyToGuid: p.threadOriginatorGuid ?? null,
      shareStatus: 0,
      shareDirection: 0,
      wasDeliveredQuietly: false,
      didNotifyRecipient: false,
      chats: [this.chatSummary(chat)],
      messageSummaryInfo: null,
      payloadData: null,
      dateEdited: null,
      dateRetracted: null,
      partCount: Math.max(1, attachments.length + (p.text ? 1 : 0)),
    };
    this.messages.push(rec);
    return rec;
  }

  // ---------------------------------------------------------------------------- serializers

  private serHandle(h: BBHandleRecord, notification: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = { originalROWID: h.originalROWID, address: h.address, service: h.service };
    if (!notification) {
      out.uncanonicalizedId = h.uncanonicalizedId;
      out.country = h.country;
    }
    return out;
  }

  private serChat(chat: BBChatRecord | BBChatSummary, notification: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {
      originalROWID: chat.originalROWID,
      guid: chat.guid,
      style: chat.style,
      chatIdentifier: chat.chatIdentifier,
      isArchived: chat.isArchived,
      displayName: chat.displayName,
    };
    if (!notification) {
      out.isFiltered = chat.isFiltered;
      out.groupId = chat.groupId;
      out.properties = chat.properties;
      out.lastAddressedHandle = chat.lastAddressedHandle;
    }
    return out;
  }

  private serAttachment(a: BBAttachmentRecord, notification: boolean, convert: boolean, loadMetadata: boolean) {
    const conv = convert ? conversionOf(a) : null;
    const out: Record<string, unknown> = {
      originalROWID: a.originalROWID,
      guid: a.guid,
      uti: a.uti,
      mimeType: conv?.mime ?? a.mimeType,
      transferName: conv?.name ?? a.transferName,
      totalBytes: a.totalBytes,
    };
    if (!notification) {
      out.transferState = a.transferState;
      out.isOutgoing = a.isOutgoing;
      out.hideAttachment = a.hideAttachment;
      out.isSticker = a.isSticker;
      out.originalGuid = a.originalGuid;
      out.hasLivePhoto = a.hasLivePhoto;
    }
    if (loadMetadata) {
      out.height = a.height;
      out.width = a.width;
      if (a.metadata !== undefined) out.metadata = a.metadata;
    }
    return out;
  }

  serialize(rec: BBMessageRecord, options: Partial<SerCfg>): Record<string, unknown> {
    const cfg: SerCfg = { ...SER_DEFAULTS, ...options };
    let out: Record<string, unknown> = {
      originalROWID: rec.originalROWID,
      guid: rec.guid,
      text: rec.text,
      attributedBody: cfg.parseAttributedBody ? rec.attributedBody : null,
      handle: rec.handle ? this.serHandle(rec.handle, cfg.notification) : null,
      handleId: rec.handleId,
      otherHandle: rec.otherHandle,
      attachments: cfg.withAttachments
        ? rec.attachments.map((a) => this.serAttachment(a, cfg.notification, cfg.convert, cfg.loadMetadata))
        : [],
      subject: rec.subject,
      error: rec.error,
      dateCreated: rec.dateCreated,
      dateRead: rec.dateRead,
      dateDelivered: rec.dateDelivered,
      isDelivered: rec.isDelivered,
      isFromMe: rec.isFromMe,
      hasDdResults: rec.hasDdResults,
      isArchived: rec.isArchived,
      itemType: rec.itemType,
      groupTitle: rec.groupTitle,
      groupActionType: rec.groupActionType,
      balloonBundleId: rec.balloonBundleId,
      associatedMessageGuid: rec.associatedMessageGuid,
      associatedMessageType: rec.associatedMessageType,
      expressiveSendStyleId: rec.expressiveSendStyleId,
      threadOriginatorGuid: rec.threadOriginatorGuid,
      hasPayloadData: rec.hasPayloadData,
    };
    if (!cfg.notification) {
      out = {
        ...out,
        country: rec.country,
        isDelayed: rec.isDelayed,
        isAutoReply: rec.isAutoReply,
        isSystemMessage: rec.isSystemMessage,
        isServiceMessage: rec.isServiceMessage,
        isForward: rec.isForward,
        threadOriginatorPart: rec.threadOriginatorPart,
        isCorrupt: rec.isCorrupt,
        datePlayed: rec.datePlayed,
        cacheRoomnames: rec.cacheRoomnames,
        isSpam: rec.isSpam,
        isExpired: rec.isExpired,
        timeExpressiveSendPlayed: rec.timeExpressiveSendPlayed,
        isAudioMessage: rec.isAudioMessage,
        replyToGuid: rec.replyToGuid,
        shareStatus: rec.shareStatus,
        shareDirection: rec.shareDirection,
      };
      if (this.osMajor >= 12) {
        out.wasDeliveredQuietly = rec.wasDeliveredQuietly;
        out.didNotifyRecipient = rec.didNotifyRecipient;
      }
    }
    if (cfg.includeChats) {
      const chats = rec.chats.map((c) => {
        const live = this.chats.get(c.guid) ?? c;
        return this.serChat(live, cfg.notification);
      });
      out.chats = chats;
      const first = rec.chats[0];
      const live = first ? this.chats.get(first.guid) : undefined;
      if (cfg.loadChatParticipants && !cfg.participantsPreloaded && live?.style === 43 && chats[0]) {
        // HandleSerializer is called without isForNotification here: full handle shape even in webhooks
        chats[0].participants = live.participants.map((h) => this.serHandle(h, false));
      }
    }
    out.messageSummaryInfo = null; // parse flags only ever yield null for plain messages
    out.payloadData = null;
    if (this.osMajor >= 13) {
      out.dateEdited = rec.dateEdited;
      out.dateRetracted = rec.dateRetracted;
      out.partCount = rec.partCount;
    }
    if (cfg.enforceMaxSize && Buffer.byteLength(JSON.stringify([out]), "utf8") > 4000) {
      for (const c of (out.chats as Record<string, unknown>[] | undefined) ?? []) {
        if (Array.isArray(c.participants) && c.participants.length) c.participants = [];
      }
    }
    return out;
  }

  /** B/index.ts handleNewMessage (webhook part) */
  private pollerShape(rec: BBMessageRecord) {
    return this.serialize(rec, {
      notification: true,
      loadChatParticipants: true,
      enforceMaxSize: true,
    });
  }

  /** B/index.ts emitMessageMatch / emitMessageError */
  private matchShape(rec: BBMessageRecord, tempGuid: string | null) {
    const out = this.serialize(rec, { notification: true });
    if (isNotEmpty(tempGuid)) out.tempGuid = tempGuid;
    return out;
  }

  /** B/index.ts handleUpdatedMessage: includeChats false */
  private updatedShape(rec: BBMessageRecord) {
    return this.serialize(rec, {
      notification: true,
      includeChats: false,
    });
  }

  /** Send responses: loadChatParticipants false, parse flags true, default attachment config. */
  private responseShape(rec: BBMessageRecord, withAttachments = true) {
    return this.serialize(rec, {
      parseAttributedBody: true,
      withAttachments,
    });
  }

  // ---------------------------------------------------------------------------- webhooks

  emit(type: string, data: unknown): Promise<void> {
    const payload = JSON.parse(JSON.stringify({ type, data: data ?? null })) as { type: string; data: unknown };
    this.emitted.push({ type, data: payload.data, at: Date.now() });
    const targets = this.webhooks.filter((w) => w.events.includes("*") || w.events.includes(type));
    const p = Promise.allSettled(
      targets.map((w) => {
        try {
          return this.deliverFn(w.url, JSON.parse(JSON.stringify(payload)) as { type: string; data: unknown });
        } catch {
          return Promise.resolve();
        }
      }),
    ).then(() => undefined);
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    return p;
  }

  private async emitSendWebhooks(rec: BBMessageRecord, tempGuid: string | null, matched: boolean): Promise<void> {
    // MessagePoller resolves the MessagePromise (emitMessageMatch, with tempGuid) and emits new-entry
    if (matched && isNotEmpty(tempGuid)) await this.emit("new-message", this.matchShape(rec, tempGuid));
    await this.emit("new-message", this.pollerShape(rec));
    // error rows: the next poll's handlePreviouslyUnsent emits message-send-error (promise already resolved → no tempGuid)
    if (rec.error !== 0) await this.emit("message-send-error", this.matchShape(rec, null));
  }

  receive(opts: ReceiveOptions): BBMessageRecord {
    const isFromMe = opts.isFromMe ?? false;
    const chatGuid = opts.chatGuid ?? `iMessage;-;${opts.from}`;
    const service = chatGuid.includes(";") ? (chatGuid.split(";")[0] ?? "iMessage") : "iMessage";
    const chat = this.ensureChat(chatGuid, chatGuid.includes(";+;") && !isFromMe ? [opts.from] : []);
    const sender = isFromMe ? null : this.getHandle(opts.from, service);
    let assocGuid = opts.associatedMessageGuid ?? null;
    if (assocGuid && !/^(p:\d+\/|bp:)/.test(assocGuid)) assocGuid = `p:0/${assocGuid}`;
    let text = opts.text ?? null;
    if (assocGuid && opts.associatedMessageType && text === null) {
      const target = this.messages.find((m) => m.guid === assocGuid!.replace(/^(p:\d+\/|bp:)/, ""));
      text = reactionText(opts.associatedMessageType, target);
    }
    const att = opts.attachment;
    const rec = this.createMessage({
      chat,
      isFromMe,
      sender,
      text: att && opts.text === undefined ? null : text,
      attachments: att
        ? [{ name: att.name, mime: att.mimeType, uti: att.uti ?? utiFromMime(att.mimeType), bytes: att.bytes, outgoing: isFromMe }]
        : [],
      associatedMessageGuid: assocGuid,
      associatedMessageType: opts.associatedMessageType ?? null,
      threadOriginatorGuid: opts.threadOriginatorGuid ?? null,
      threadOriginatorPart: opts.threadOriginatorGuid ? "0:0:0" : null,
      isAudioMessage: att ? att.uti === "com.apple.coreaudio-format" || att.mimeType === "audio/x-caf" : false,
      dateCreated: opts.dateCreated,
    });
    if (isFromMe) {
      rec.isDelivered = false;
    }
    if (opts.emit ?? true) void this.emit("new-message", this.pollerShape(rec));
    return rec;
  }

  async markDelivered(guid: string): Promise<void> {
    const rec = this.messages.find((m) => m.guid === guid);
    if (!rec) throw new Error(`fake BlueBubbles: no message ${guid}`);
    rec.dateDelivered = Date.now();
    rec.isDelivered = true;
    await this.emit("updated-message", this.updatedShape(rec));
  }

  async markRead(guid: string): Promise<void> {
    const rec = this.messages.find((m) => m.guid === guid);
    if (!rec) throw new Error(`fake BlueBubbles: no message ${guid}`);
    rec.dateRead = Date.now();
    if (!rec.isDelivered) {
      rec.isDelivered = true;
      rec.dateDelivered = rec.dateRead;
    }
    await this.emit("updated-message", this.updatedShape(rec));
  }

  /** PrivateApiTypingEventHandler */
  async remoteTyping(chatGuid: string, display: boolean): Promise<void> {
    if (chatGuid.includes(";+;")) return;
    const now = Date.now();
    const prev = this.typingEventCache.get(chatGuid);
    const shouldEmit = !prev || prev.lastValue !== display || now - prev.lastSeen > 5000;
    if (!shouldEmit) return;
    this.typingEventCache.set(chatGuid, { lastSeen: now, lastValue: display });
    await this.emit("typing-indicator", { display, guid: chatGuid });
  }

  // ---------------------------------------------------------------------------- HTTP plumbing

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const raw = await readBody(req);
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const query: Record<string, string> = {};
      for (const [k, v] of url.searchParams) query[k] = v;
      const parsed = parseBody(req, raw);
      this.requests.push({ method: (req.method ?? "GET").toUpperCase(), path: url.pathname, query, body: parsed.record });

      if (this.faults.mode) return this.writeMode(res, this.faults.mode);

      let reply: Reply;
      try {
        if (parsed.error !== undefined) throw unhandled(parsed.error);
        reply = await this.route((req.method ?? "GET").toUpperCase(), url.pathname, query, parsed);
      } catch (e) {
        if (e instanceof HttpError) reply = { status: e.status, json: e.body };
        else reply = { status: 500, json: unhandled((e as Error)?.message ?? String(e)).body };
      }
      if (reply === HANG) return; // never answered; close() destroys the socket
      this.write(res, reply);
    } catch (e) {
      if (!res.headersSent && !res.destroyed) {
        this.write(res, { status: 500, json: unhandled((e as Error)?.message ?? String(e)).body });
      }
    }
  }

  private write(res: ServerResponse, reply: JsonReply): void {
    if (res.destroyed || res.writableEnded) {
      if (reply.after) void reply.after();
      return;
    }
    const headers: Record<string, string> = { "Access-Control-Allow-Origin": "*", ...(reply.headers ?? {}) };
    let payload: Buffer;
    if (reply.bytes) {
      headers["Content-Type"] = reply.bytes.mime;
      payload = Buffer.from(reply.bytes.data);
    } else if (reply.html !== undefined) {
      headers["Content-Type"] = "text/html; charset=utf-8";
      payload = Buffer.from(reply.html);
    } else if (reply.text !== undefined) {
      headers["Content-Type"] = "text/plain; charset=utf-8";
      payload = Buffer.from(reply.text);
    } else {
      headers["Content-Type"] = "application/json; charset=utf-8";
      payload = Buffer.from(JSON.stringify(reply.json));
    }
    headers["Content-Length"] = String(payload.length);
    res.writeHead(reply.status, headers);
    res.end(payload, () => {
      if (reply.after) void reply.after();
    });
  }

  private writeMode(res: ServerResponse, mode: NonNullable<BBFaults["mode"]>): void {
    switch (mode) {
      case "html":
        return this.write(res, {
          status: 200,
          html:
            "<!DOCTYPE html><html><head><title>Just a moment...</title></head>" +
            "<body><h1>Checking your browser before accessing this site.</h1></body></html>",
        });
      case "garbage":
        res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" });
        res.end(Buffer.from([0x00, 0x7b, 0x22, 0x73, 0x74, 0x61, 0xff, 0xfe, 0x3c, 0x21, 0x2d, 0x2d]));
        return;
      case "error-envelope":
        return this.write(res, {
          status: 200,
          json: envelope(500, "The server has encountered an error", "Server Error", "Server Error"),
        });
      case "503":
        return this.write(res, { status: 503, text: "Service Unavailable" });
      case "huge": {
        const total = 50 * 1024 * 1024;
        const chunk = Buffer.alloc(64 * 1024, 0x41);
        const head = Buffer.from('{"status":200,"message":"Success","data":"');
        const tail = Buffer.from('"}');
        res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" });
        let sent = 0;
        const target = total - head.length - tail.length;
        res.write(head);
        const pump = () => {
          while (sent < target) {
            if (res.destroyed) return;
            const n = Math.min(chunk.length, target - sent);
            sent += n;
            if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
              res.once("drain", pump);
              return;
            }
          }
          res.end(tail);
        };
        pump();
        return;
      }
    }
  }

  // ---------------------------------------------------------------------------- routing

  private routes: {
    method: string;
    path: string;
    papi?: boolean;
    handler: (ctx: Ctx) => Promise<Reply>;
  }[] = [
    { method: "GET", path: "ping", handler: async () => success("Ping received!", "pong") },
    { method: "GET", path: "server/info", handler: async () => success("Success", this.serverInfo()) },
    { method: "GET", path: "attachment/:guid/download", handler: (c) => this.downloadAttachment(c) },
    { method: "GET", path: "attachment/:guid", handler: (c) => this.findAttachment(c) },
    { method: "POST", path: "chat/new", handler: (c) => this.createChat(c) },
    { method: "GET", path: "chat/:guid/message", handler: (c) => this.chatMessages(c) },
    { method: "POST", path: "chat/:guid/read", papi: true, handler: (c) => this.markChatRead(c, true) },
    { method: "POST", path: "chat/:guid/unread", papi: true, handler: (c) => this.markChatRead(c, false) },
    { method: "POST", path: "chat/:guid/typing", papi: true, handler: (c) => this.typing(c, "start") },
    // 1.9.9 bug: ChatRouter.stopTyping calls ChatInterface.startTyping
    { method: "DELETE", path: "chat/:guid/typing", papi: true, handler: (c) => this.typing(c, "stop") },
    { method: "GET", path: "chat/:guid", handler: (c) => this.findChat_(c) },
    { method: "POST", path: "message/text", handler: (c) => this.sendText(c) },
    { method: "POST", path: "message/attachment", handler: (c) => this.sendAttachment(c) },
    { method: "POST", path: "message/react", papi: true, handler: (c) => this.react(c) },
    { method: "GET", path: "message/count", handler: (c) => this.count(c, false) },
    { method: "GET", path: "message/count/me", handler: (c) => this.count(c, true) },
    { method: "POST", path: "message/query", handler: (c) => this.query(c) },
    { method: "GET", path: "message/:guid", handler: (c) => this.findMessage(c) },
    { method: "GET", path: "handle/availability/imessage", papi: true, handler: (c) => this.availability(c) },
    { method: "GET", path: "webhook", handler: (c) => this.listWebhooks(c) },
    { method: "POST", path: "webhook", handler: (c) => this.createWebhook(c) },
    { method: "DELETE", path: "webhook/:id", handler: (c) => this.deleteWebhook(c) },
  ];

  private matchPath(pattern: string, segments: string[]): Record<string, string> | null {
    const parts = pattern.split("/");
    if (parts.length !== segments.length) return null;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] ?? "";
      const s = segments[i] ?? "";
      if (p.startsWith(":")) {
        if (!s) return null;
        try {
          params[p.slice(1)] = decodeURIComponent(s);
        } catch {
          params[p.slice(1)] = s;
        }
      } else if (p.toLowerCase() !== s.toLowerCase()) return null;
    }
    return params;
  }

  private async route(method: string, pathname: string, query: Record<string, string>, parsed: ParsedBody): Promise<Reply> {
    const m = method === "HEAD" ? "GET" : method;
    let path = pathname.replace(/\/+$/, "");
    if (path === "" && m === "GET") {
      return { status: 200, html: "<!DOCTYPE html><html><body>BlueBubbles Server</body></html>" };
    }
    const prefix = /^\/api\/v1\//i.exec(path);
    if (!prefix) return { status: 404, text: "Not Found" };
    path = path.slice(prefix[0].length);
    const segments = path.split("/");
    const allowed = new Set<string>();
    for (const r of this.routes) {
      const params = this.matchPath(r.path, segments);
      if (!params) continue;
      if (r.method !== m) {
        allowed.add(r.method);
        if (r.method === "GET") allowed.add("HEAD");
        continue;
      }
      // AuthMiddleware
      const token = query.guid ?? query.password ?? query.token;
      if (!token) throw unauthorized("Missing server password!");
      if (this.password.trim() !== token.trim()) throw unauthorized();
      // PrivateApiMiddleware
      if (r.papi) {
        const err = this.papiStatusError();
        if (err) throw iMessageError({ message: PAPI_SETUP_MESSAGE, error: err });
      }
      const body = parsed.body && typeof parsed.body === "object" && !Array.isArray(parsed.body) ? parsed.body : {};
      return r.handler({ params, query, body: body as Record<string, unknown>, files: parsed.files, rawBody: parsed.body });
    }
    if (allowed.size) {
      return { status: 405, text: "Method Not Allowed", headers: { Allow: [...allowed].join(", ") } };
    }
    return { status: 404, text: "Not Found" };
  }

  private serverInfo() {
    return {
      computer_id: this.computerId,
      os_version: this.osVersion,
      server_version: "1.9.9",
      private_api: this.privateApi,
      proxy_service: "Cloudflare",
      helper_connected: this.helperConnected,
      detected_icloud: this.appleId,
      detected_imessage: this.appleId,
      macos_time_sync: null,
      local_ipv4s: ["127.0.0.1"],
      local_ipv6s: [],
    };
  }

  // ---------------------------------------------------------------------------- sends (shared)

  /**
   * Runs a send against the "Mac": hang faults, delay, natural failures, failNext, record creation,
   * webhooks. Returns the outcome, or HANG.
   */
  private async performSend(p: {
    kind: SendKind;
    method: "apple-script" | "private-api";
    chatGuid: string;
    tempGuid: string | null;
    build: (chat: BBChatRecord, error: number) => BBMessageRecord;
    beforeSend?: (chatGuid: string) => void;
  }): Promise<Outcome | typeof HANG> {
    const gen = this.generation;
    if (this.faults.hangWithoutSend > 0) {
      this.faults.hangWithoutSend--;
      return HANG; // the tempGuid stays in the send cache, like a stuck AppleScript/helper call
    }
    const fault = this.faults.failNext.shift();
    if (fault === "attachment-too-large") {
      // for JSON sends the analogue is koa-body's jsonLimit (100mb): raw-body's error, unhandled → 500
      throw unhandled("request entity too large");
    }
    if (!(await this.sleep(this.faults.sendDelayMs)) || gen !== this.generation) return HANG;
    p.beforeSend?.(p.chatGuid);

    const chatGuid = p.chatGuid;
    const isGroupGuid = chatGuid.includes(";+;");
    let chat = this.findChat(chatGuid);

    if (fault === "private-api") {
      return { kind: "error", message: "iMessage Private API Helper is not connected!", papi: true };
    }
    if (p.method === "private-api") {
      const err = this.papiStatusError();
      if (err) return { kind: "error", message: err, papi: true };
    }
    // natural failures
    if (fault === "unknown-chat" || (!chat && isGroupGuid)) {
      if (p.method === "private-api") return { kind: "error", message: "Failed to send message!" }; // inferred
      return { kind: "error", message: appleScriptUnknownChatError(chatGuid) };
    }
    if (p.method === "apple-script" && this.osVersion.startsWith("26") && chatGuid.startsWith("any;")) {
      return { kind: "error", message: appleScriptAnyServiceError(chatGuid) };
    }
    // a bare address is sent by the fallback script, but the MessagePromise never matches the DB chat GUID
    let noMatch = false;
    if (!chatGuid.includes(";")) {
      if (p.method === "private-api") return { kind: "error", message: "Failed to send message!" }; // inferred
      chat = this.findChat(`iMessage;-;${bbAddressFormat(chatGuid)}`);
      if (!chat) chat = this.ensureChat(`iMessage;-;${bbAddressFormat(chatGuid)}`);
      noMatch = true;
    }
    if (!chat) {
      // unknown 1:1 chat: the fallback AppleScript (participant of service) creates it (inferred for private-api)
      const [svc = "iMessage", addr = ""] = chatGuid.split(";-;");
      chat = this.ensureChat(`${svc};-;${bbAddressFormat(addr)}`);
    }
    const recipient = chat.style === 45 ? chat.chatIdentifier : null;
    const service = chat.guid.split(";")[0];
    const unregistered =
      fault === "not-registered" ||
      (recipient !== null &&
        service !== "SMS" &&
        this.imessageRegistered !== null &&
        !this.imessageRegistered.has(recipient));
    const record = p.build(chat, unregistered ? 22 : 0);

    if (fault === "match-timeout" || noMatch) {
      await this.emit("new-message", this.pollerShape(record));
      if (!(await this.sleep(this.faults.matchTimeoutMs)) || gen !== this.generation) return HANG;
      return { kind: "timeout", record };
    }
    return { kind: "sent", record, matched: true };
  }

  /** Wrap a successful outcome into a reply with webhooks before/after it, or a hang. */
  private finishSend(outcome: { record: BBMessageRecord; matched: boolean }, tempGuid: string | null, reply: JsonReply): Promise<Reply> {
    const emit = () => this.emitSendWebhooks(outcome.record, tempGuid, outcome.matched);
    if (this.faults.hangAfterSend > 0) {
      this.faults.hangAfterSend--;
      return emit().then(() => HANG);
    }
    if (this.faults.webhooksBeforeResponse) return emit().then(() => reply);
    return Promise.resolve({ ...reply, after: emit });
  }

  private async guarded<T>(release: () => void, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      release();
      throw e;
    }
  }

  private stopTypingBeforeSend = (chatGuid: string) => {
    if (this.typingCache.has(chatGuid)) {
      this.typingCache.delete(chatGuid);
      this.privateApiCalls.push({ type: "stop-typing", chatGuid, at: Date.now() });
    }
  };

  // ---------------------------------------------------------------------------- POST /message/text

  private async sendText(ctx: Ctx): Promise<Reply> {
    const body = ctx.body;
    validateInput(body, {
      chatGuid: "required|string",
      tempGuid: "string",
      message: "present|string",
      method: "string|in:apple-script,private-api",
      effectId: "string",
      subject: "string",
      selectedMessageGuid: "string",
      partIndex: "numeric|min:0",
      ddScan: "boolean",
    });
    const tempGuid = (body.tempGuid as string | undefined) ?? null;
    const message = body.message as string;
    const subject = (body.subject as string | undefined) ?? null;
    let method = ((body.method as string | undefined) ?? "apple-script") as "apple-script" | "private-api";
    if (body.effectId || body.subject || body.selectedMessageGuid || body.ddScan || body.attributedBody) {
      method = "private-api";
    }
    if (method === "apple-script" && isEmpty(tempGuid)) {
      throw badRequest("A 'tempGuid' is required when sending via AppleScript");
    }
    if (method === "apple-script" && isEmpty(message)) {
      throw badRequest("A 'message' is required when sending via AppleScript");
    }
    if (method === "private-api" && isEmpty(message) && isEmpty(subject)) {
      throw badRequest("A 'message' or 'subject' is required when sending via the Private API");
    }
    if (tempGuid !== null && this.sendCache.has(tempGuid)) {
      throw badRequest(`Message is already queued to be sent! (Temp GUID: ${tempGuid})`);
    }
    if (isNotEmpty(tempGuid)) this.sendCache.add(tempGuid!);
    const selected = (body.selectedMessageGuid as string | undefined) ?? null;
    const partIndex = Number.parseInt(String(body.partIndex ?? 0), 10) || 0;
    const text = message ?? "";
    const release = () => {
      if (tempGuid) this.sendCache.delete(tempGuid);
    };

    const outcome = await this.guarded(release, () => this.performSend({
      kind: "text",
      method,
      chatGuid: body.chatGuid as string,
      tempGuid,
      beforeSend: this.stopTypingBeforeSend,
      build: (chat, error) =>
        this.createMessage({
          chat,
          isFromMe: true,
          text,
          subject,
          effectId: (body.effectId as string | undefined) ?? null,
          threadOriginatorGuid: selected,
          threadOriginatorPart: selected ? `${partIndex}:0:${text.length}` : null,
          error,
        }),
    }));
    if (outcome === HANG) return HANG; // hangWithoutSend: the tempGuid stays queued
    release();
    if (outcome.kind === "error") {
      throw iMessageError({ message: "Message Send Error", error: outcome.message });
    }
    if (outcome.kind === "timeout") {
      if (method === "private-api") {
        throw iMessageError({
          message: "Message Send Error",
          error: "Failed to send message! Message not found in database after 60 seconds!",
        });
      }
      throw iMessageError({
        message: "Message Send Error",
        error: "Failed to send message! See attached message error code.",
        data: null,
      });
    }
    // private-api: getMessage(identifier, withChats=true, withAttachments=false)
    const data = this.responseShape(outcome.record, method === "apple-script");
    if (isNotEmpty(tempGuid)) data.tempGuid = tempGuid;
    const reply =
      (outcome.record.error ?? 0) !== 0
        ? {
            status: 500,
            json: iMessageError({
              message: "Message sent with an error. See attached message",
              error: "Message failed to send!",
              data,
            }).body,
          }
        : success("Message sent!", data);
    return this.finishSend(outcome, tempGuid, reply);
  }

  // ---------------------------------------------------------------------------- POST /message/attachment

  private async sendAttachment(ctx: Ctx): Promise<Reply> {
    if (this.faults.failNext[0] === "attachment-too-large") {
      // formidable (koa-body) rejects while parsing, before routing → ErrorMiddleware → unhandled 500
      this.faults.failNext.shift();
      throw unhandled(`maxFileSize exceeded, received ${MAX_FILE_SIZE + 65536} bytes of file data`);
    }
    const body = ctx.body;
    validateInput(body, {
      chatGuid: "required|string",
      tempGuid: "string",
      method: "string|in:apple-script,private-api",
      name: "required|string",
      isAudioMessage: "boolean",
      effectId: "string",
      subject: "string",
      selectedMessageGuid: "string",
      partIndex: "numeric|min:0",
    });
    const tempGuid = (body.tempGuid as string | undefined) ?? null;
    let method = ((body.method as string | undefined) ?? "apple-script") as "apple-script" | "private-api";
    if (body.effectId || body.subject || body.selectedMessageGuid || body.attributedBody) method = "private-api";
    if (method === "apple-script" && isEmpty(tempGuid)) {
      throw badRequest("A 'tempGuid' is required when sending via AppleScript");
    }
    const isAudioMessage = body.isAudioMessage === "true";
    if (tempGuid !== null && this.sendCache.has(tempGuid)) throw badRequest("Attachment is already queued to be sent!");
    const file = ctx.files.attachment;
    if (!file || file.data.length === 0) throw badRequest("Attachment not provided or was empty!");
    if (isNotEmpty(tempGuid)) this.sendCache.add(tempGuid!);
    const release = () => {
      if (tempGuid) this.sendCache.delete(tempGuid);
    };

    let name = body.name as string;
    let { mime, uti } = typeFromName(name);
    if (isAudioMessage && name.endsWith(".mp3")) {
      // converted to CAF before sending (bytes are kept as uploaded: the fake does not transcode)
      name = `${name.slice(0, -4)}.caf`;
      mime = "audio/x-caf";
      uti = "com.apple.coreaudio-format";
    }
    const selected = (body.selectedMessageGuid as string | undefined) ?? null;
    const outcome = await this.guarded(release, () => this.performSend({
      kind: "attachment",
      method,
      chatGuid: body.chatGuid as string,
      tempGuid,
      build: (chat, error) =>
        this.createMessage({
          chat,
          isFromMe: true,
          text: null,
          subject: (body.subject as string | undefined) ?? null,
          effectId: (body.effectId as string | undefined) ?? null,
          threadOriginatorGuid: selected,
          threadOriginatorPart: selected ? `${String(body.partIndex ?? 0)}:0:1` : null,
          attachments: [{ name, mime, uti, bytes: new Uint8Array(file.data), outgoing: true }],
          isAudioMessage,
          error,
        }),
    }));
    if (outcome === HANG) return HANG;
    release();
    if (outcome.kind === "error") throw iMessageError({ message: "Attachment Send Error", error: outcome.message });
    if (outcome.kind === "timeout") {
      throw iMessageError({
        message: "Attachment Send Error",
        error: "Failed to send attachment! See attached message error code.",
        data: null,
      });
    }
    // no error check and no tempGuid echo in MessageRouter.sendAttachment
    return this.finishSend(outcome, tempGuid, success("Attachment sent!", this.responseShape(outcome.record)));
  }

  // ---------------------------------------------------------------------------- POST /chat/new

  private async createChat(ctx: Ctx): Promise<Reply> {
    const body = ctx.body;
    validateInput(body, {
      addresses: "required|array",
      message: "string",
      method: "string|in:apple-script,private-api",
      service: "string|in:iMessage,SMS",
      tempGuid: "string",
      effectId: "string",
      subject: "string",
    });
    const addresses = body.addresses as unknown[];
    const message = (body.message as string | undefined) ?? null;
    const method = ((body.method as string | undefined) ?? "apple-script") as "apple-script" | "private-api";
    const service = (body.service as string | undefined) ?? "iMessage";
    const tempGuid = (body.tempGuid as string | undefined) ?? null;
    if (isEmpty(addresses)) throw unhandled("No addresses provided!");
    if (method === "apple-script" && addresses.length > 1) {
      throw unhandled("Cannot create group chats on macOS Big Sur or newer!");
    } else if (method === "apple-script" && isEmpty(message)) {
      throw unhandled("A message is required when creating chats on macOS Big Sur or newer!");
    } else if (method === "private-api" && isEmpty(message)) {
      throw unhandled("A message is required when creating chats with the Private API!");
    }
    const addrs = addresses.map((a) => bbAddressFormat(String(a)));
    const chatGuid =
      method === "private-api" && addrs.length > 1
        ? `${service};+;chat${Math.floor(Math.random() * 1e17)}`
        : `${service};-;${addrs[0]}`;
    if (method === "private-api" && addrs.length > 1) this.ensureChat(chatGuid, addrs);

    const outcome = await this.performSend({
      kind: "chat-new",
      method,
      chatGuid,
      tempGuid,
      beforeSend: method === "apple-script" ? this.stopTypingBeforeSend : undefined,
      build: (chat, error) =>
        this.createMessage({
          chat,
          isFromMe: true,
          text: message,
          subject: (body.subject as string | undefined) ?? null,
          effectId: (body.effectId as string | undefined) ?? null,
          error,
        }),
    });
    if (outcome === HANG) return HANG;
    if (outcome.kind === "error") throw unhandled(outcome.message);
    if (outcome.kind === "timeout") throw unhandled("Message send timeout");
    const chat = this.chats.get(outcome.record.chats[0]?.guid ?? "") ?? this.ensureChat(chatGuid);
    const msg = this.serialize(outcome.record, {
      includeChats: false,
      loadChatParticipants: true,
    });
    if (isNotEmpty(tempGuid)) msg.tempGuid = tempGuid;
    const data = {
      ...this.serChat(chat, true),
      participants: chat.participants.map((h) => this.serHandle(h, false)),
      messages: [msg],
      isFiltered: chat.isFiltered,
      groupId: chat.groupId,
      properties: chat.properties,
      lastAddressedHandle: chat.lastAddressedHandle,
    };
    // only the apple-script path goes through sendMessageSync's MessagePromise (tempGuid match)
    const matchedOutcome = { record: outcome.record, matched: method === "apple-script" };
    return this.finishSend(matchedOutcome, tempGuid, success("Successfully created chat!", data));
  }

  // ---------------------------------------------------------------------------- POST /message/react

  private async react(ctx: Ctx): Promise<Reply> {
    const body = ctx.body;
    validateInput(body, {
      chatGuid: "required|string",
      selectedMessageGuid: "required|string",
      reaction: `required|string|in:${POSSIBLE_REACTIONS.join(",")}`,
      partIndex: "numeric|min:0",
    });
    const target = this.messages.find((m) => m.guid === body.selectedMessageGuid);
    if (!target) throw badRequest("Selected message does not exist!");
    const reaction = body.reaction as string;
    const partIndex = Number.parseInt(String(body.partIndex ?? 0), 10) || 0;
    if (this.faults.failNext[0] === "private-api") {
      this.faults.failNext.shift();
      // the helper dropped: PrivateApiMiddleware rejects before anything else
      throw iMessageError({ message: PAPI_SETUP_MESSAGE, error: "iMessage Private API Helper is not connected!" });
    }
    let chatGuid = body.chatGuid as string;
    if (!this.findChat(chatGuid) && !chatGuid.includes(";+;")) {
      chatGuid = target.chats[0]?.guid ?? chatGuid;
    }
    const outcome = await this.performSend({
      kind: "react",
      method: "private-api",
      chatGuid,
      tempGuid: null,
      build: (chat) =>
        this.createMessage({
          chat,
          isFromMe: true,
          text: reactionText(reaction, target),
          associatedMessageGuid: `p:${partIndex}/${target.guid}`,
          associatedMessageType: reaction,
        }),
    });
    if (outcome === HANG) return HANG;
    if (outcome.kind === "error") throw iMessageError({ message: "Reaction Send Error", error: outcome.message });
    if (outcome.kind === "timeout") {
      throw iMessageError({
        message: "Reaction Send Error",
        error: "Failed to send reaction! See attached message error code.",
        data: null,
      });
    }
    const reply = success("Reaction sent!", this.responseShape(outcome.record, false));
    return this.finishSend({ record: outcome.record, matched: false }, null, reply);
  }

  // ---------------------------------------------------------------------------- typing / read

  private async typing(ctx: Ctx, which: "start" | "stop"): Promise<Reply> {
    const guid = ctx.params.guid ?? "";
    // ChatInterface.startTyping is called for both (1.9.9 bug in stopTyping)
    this.privateApiCalls.push({ type: "start-typing", chatGuid: guid, at: Date.now() });
    this.typingCache.add(guid);
    return success(which === "start" ? "Successfully started typing!" : "Successfully stopped typing!");
  }

  private async markChatRead(ctx: Ctx, read: boolean): Promise<Reply> {
    const guid = ctx.params.guid ?? "";
    this.privateApiCalls.push({ type: read ? "mark-read" : "mark-unread", chatGuid: guid, at: Date.now() });
    await this.emit("chat-read-status-changed", { chatGuid: guid, read });
    return success(read ? "Successfully marked chat as read!" : "Successfully marked chat as unread!");
  }

  // ---------------------------------------------------------------------------- reads

  private async findMessage(ctx: Ctx): Promise<Reply> {
    const withQuery = parseWithQuery(ctx.query.with);
    const withChats = withQuery.some((w) => w === "chats" || w === "chat");
    const withParticipants = withQuery.some((w) => w === "chats.participants" || w === "chat.participants");
    const withAttachments = withQuery.some((w) => w === "attachment" || w === "attachments");
    const withAttributedBody = withQuery.some((w) => w === "attributedbody" || w === "attributed-body");
    const rec = this.messages.find((m) => m.guid === ctx.params.guid);
    if (!rec) throw notFound("Message does not exist!");
    const data = this.serialize(withChats ? rec : { ...rec, chats: [] }, {
      loadChatParticipants: true,
      participantsPreloaded: withParticipants,
      parseAttributedBody: withAttributedBody,
      withAttachments,
    });
    return success("Success", data);
  }

  private filterMessages(p: {
    chatGuid?: string | null;
    after?: unknown;
    before?: unknown;
    where?: { statement: string; args: unknown }[];
    requireChats?: boolean;
  }): BBMessageRecord[] {
    let list = this.messages.slice();
    if (p.chatGuid) list = list.filter((m) => m.chats.some((c) => c.guid === p.chatGuid));
    else if (p.requireChats) list = list.filter((m) => m.chats.length > 0);
    for (const w of p.where ?? []) list = list.filter(whereFilter(w));
    // getMessages: numbers become Dates; anything else truthy reaches convertDateTo2001Time, which
    // returns null, so `message.date >= NULL` matches nothing
    if (p.after || p.before) {
      if ((p.after && typeof p.after !== "number") || (p.before && typeof p.before !== "number")) return [];
      if (p.after) list = list.filter((m) => m.dateCreated >= (p.after as number));
      if (p.before) list = list.filter((m) => m.dateCreated <= (p.before as number));
    }
    return list;
  }

  private sortPage(list: BBMessageRecord[], sort: unknown, offset: number, limit: number): BBMessageRecord[] {
    const dir = sort === "ASC" ? 1 : -1;
    return list
      .sort((a, b) => (a.dateCreated - b.dateCreated || a.originalROWID - b.originalROWID) * dir)
      .slice(offset, offset + limit);
  }

  private async query(ctx: Ctx): Promise<Reply> {
    const body = ctx.body;
    validateInput(body, {
      with: "array",
      convertAttachments: "boolean",
      where: "array",
      "where.*.statement": "required|string",
      "where.*.args": "present",
      sort: "string|in:ASC,DESC",
      after: "numeric|min:0",
      before: "numeric|min:1",
      chatGuid: "string",
      offset: "numeric|min:0",
      limit: "numeric|min:1|max:1000",
    });
    const withQuery = parseWithQuery(body.with);
    const withChats = withQuery.some((w) => w === "chat" || w === "chats");
    const withAttachments = withQuery.some((w) => w === "attachment" || w === "attachments");
    const withAttachmentMetadata = withQuery.some((w) => w === "attachment.metadata" || w === "attachments.metadata");
    const withChatParticipants = withQuery.some((w) => w === "chat.participants" || w === "chats.participants");
    const withAttributedBody = withQuery.some((w) => w === "attributedbody" || w === "attributed-body");
    const offset = body.offset ? Number.parseInt(String(body.offset), 10) : 0;
    const limit = body.limit ? Number.parseInt(String(body.limit), 10) : 100;
    const chatGuid = (body.chatGuid as string | undefined) ?? null;
    if (chatGuid && !this.chats.has(chatGuid)) {
      // `return new Success(...)` without .send(): Koa answers its default plain-text 404
      return { status: 404, text: "Not Found" };
    }
    const loadChats = withChats || withChatParticipants || !!chatGuid;
    const all = this.filterMessages({
      chatGuid,
      after: body.after,
      before: body.before,
      where: body.where as { statement: string; args: unknown }[] | undefined,
      requireChats: loadChats,
    });
    const page = this.sortPage(all, body.sort, offset, limit);
    const data = page.map((rec) =>
      this.serialize(loadChats ? (chatGuid ? { ...rec, chats: rec.chats.filter((c) => c.guid === chatGuid) } : rec) : { ...rec, chats: [] }, {
        loadChatParticipants: withChatParticipants,
        parseAttributedBody: withAttributedBody,
        withAttachments,
        convert: body.convertAttachments === true || body.convertAttachments === "true",
        loadMetadata: withAttachmentMetadata,
      }),
    );
    return success("Successfully fetched messages!", data, { offset, limit, total: all.length, count: data.length });
  }

  private async chatMessages(ctx: Ctx): Promise<Reply> {
    validateInput(ctx.query, {
      with: "string",
      sort: "string|in:DESC,ASC",
      after: "numeric|min:0",
      before: "numeric|min:1",
      offset: "numeric|min:0",
      limit: "numeric|min:1|max:1000",
    });
    const guid = ctx.params.guid ?? "";
    if (!this.chats.has(guid)) throw notFound("Chat does not exist!");
    const withQuery = parseWithQuery(ctx.query.with);
    const withAttachments = withQuery.some((w) => w === "attachment" || w === "attachments");
    const q = ctx.query;
    const offset = q.offset ? Number.parseInt(q.offset, 10) : 0;
    const limit = q.limit ? Number.parseInt(q.limit, 10) : 100;
    const all = this.filterMessages({
      chatGuid: guid,
      after: q.after ? Number.parseInt(q.after, 10) : null,
      before: q.before ? Number.parseInt(q.before, 10) : null,
    });
    const page = this.sortPage(all, q.sort, offset, limit);
    const data = page.map((rec) =>
      this.serialize(
        { ...rec, chats: rec.chats.filter((c) => c.guid === guid) },
        {
          withAttachments,
        },
      ),
    );
    return success("Success", data, { offset, limit, total: all.length, count: page.length });
  }

  private async count(ctx: Ctx, fromMe: boolean): Promise<Reply> {
    validateInput(ctx.query, {
      chatGuid: "string",
      after: "numeric|min:0",
      before: "numeric|min:1",
      minRowId: "numeric|min:0",
      maxRowId: "numeric|min:1",
    });
    const q = ctx.query;
    let list = this.filterMessages({
      chatGuid: q.chatGuid ?? null,
      after: q.after ? Number.parseInt(q.after, 10) : null,
      before: q.before ? Number.parseInt(q.before, 10) : null,
    });
    if (q.minRowId) list = list.filter((m) => m.originalROWID >= Number.parseInt(q.minRowId!, 10));
    if (q.maxRowId) list = list.filter((m) => m.originalROWID <= Number.parseInt(q.maxRowId!, 10));
    if (fromMe) list = list.filter((m) => m.isFromMe);
    return success("Success", { total: list.length });
  }

  private async findChat_(ctx: Ctx): Promise<Reply> {
    const withQuery = parseWithQuery(ctx.query.with);
    const chat = this.chats.get(ctx.params.guid ?? "");
    if (!chat) throw notFound("Chat does not exist!");
    const data: Record<string, unknown> = {
      ...this.serChat(chat, true),
      participants: withQuery.includes("participants") ? chat.participants.map((h) => this.serHandle(h, false)) : [],
      isFiltered: chat.isFiltered,
      groupId: chat.groupId,
      properties: chat.properties,
      lastAddressedHandle: chat.lastAddressedHandle,
    };
    if (withQuery.includes("lastmessage")) {
      const last = this.sortPage(this.filterMessages({ chatGuid: chat.guid }), "DESC", 0, 1)[0];
      data.lastMessage = last
        ? this.serialize(last, {
          })
        : null;
    }
    return success("Success", data);
  }

  private findAttachmentRecord(guid: string): BBAttachmentRecord | undefined {
    for (const m of this.messages) for (const a of m.attachments) if (a.guid === guid) return a;
    return undefined;
  }

  private async findAttachment(ctx: Ctx): Promise<Reply> {
    const a = this.findAttachmentRecord(ctx.params.guid ?? "");
    if (!a) throw notFound("Attachment does not exist!");
    return success("Success", this.serAttachment(a, false, true, true));
  }

  private async downloadAttachment(ctx: Ctx): Promise<Reply> {
    validateInput(ctx.query, {
      height: "numeric|min:1",
      width: "numeric|min:1",
      quality: "string|in:good,better,best",
      force: "boolean",
      original: "boolean",
    });
    const truthy = (v: string | undefined) => ["1", "true", "True"].includes(v ?? "");
    const useOriginal = truthy(ctx.query.original);
    const forceDownload = truthy(ctx.query.force ?? "true");
    const a = this.findAttachmentRecord(ctx.params.guid ?? "");
    if (!a) {
      if (!forceDownload || !this.privateApi) throw notFound("Attachment does not exist!");
      // AttachmentInterface.forceDownload(null) fails, then the catch block logs attachment.guid
      throw unhandled("Cannot read properties of null (reading 'guid')");
    }
    const bytes = this.attachmentData.get(a.guid);
    if (!bytes) throw serverError("Attachment does not exist in disk!");
    let mime = a.mimeType ?? typeFromName(a.transferName).mime ?? "application/octet-stream";
    let data: Uint8Array = bytes;
    if (!useOriginal) {
      const conv = conversionOf(a);
      if (conv) {
        // stand-in for afconvert/sips output: deliberately not the original bytes
        data = Buffer.concat([Buffer.from(`FAKE-CONVERTED-${conv.ext.toUpperCase()}\n`), Buffer.from(bytes)]);
        mime = conv.mime;
      }
      const { quality, width, height } = ctx.query;
      if (mime.startsWith("image/") && mime !== "image/gif" && (quality || width || height)) {
        if (quality && !["good", "better", "best"].includes(quality)) {
          throw badRequest("Invalid quality specified! Must be one of: good, better, best");
        }
        data = Buffer.concat([Buffer.from("FAKE-RESIZED-PNG\n"), Buffer.from(bytes)]);
        mime = "image/png";
      }
    }
    return { status: 200, bytes: { data, mime } };
  }

  private async availability(ctx: Ctx): Promise<Reply> {
    validateInput(ctx.query, { address: "string|required" });
    const addr = bbAddressFormat(ctx.query.address ?? "");
    const available = this.imessageRegistered === null || this.imessageRegistered.has(addr);
    return success("Success", { available });
  }

  // ---------------------------------------------------------------------------- webhooks API

  private webhookJson(w: BBWebhookRow) {
    const created = new Date(Math.floor(w.created / 1000) * 1000).toISOString();
    return { id: w.id, url: w.url, events: [...w.events], created };
  }

  private async listWebhooks(ctx: Ctx): Promise<Reply> {
    // rules {name: "string", id: "number"}: `number` is not a validatorjs rule → throws when id is given
    validateInput(ctx.query, { name: "string", id: "number" });
    const url = ctx.query.url;
    const list: (BBWebhookRow | null)[] = url ? [this.webhooks.find((w) => w.url === url) ?? null] : this.webhooks;
    const out = list.map((w) => {
      if (!w) throw unhandled("Cannot read properties of null (reading 'events')");
      return this.webhookJson(w);
    });
    return success("Successfully fetched webhooks!", out);
  }

  private async createWebhook(ctx: Ctx): Promise<Reply> {
    const body = ctx.body;
    validateInput(body, { url: "required|string", events: "required|array" });
    const url = body.url as string;
    const events = body.events as unknown[];
    if (url.length === 0) throw badRequest("Webhook URL is required!");
    if (!url.startsWith("http")) throw badRequest("Webhook URL must include an HTTP scheme!");
    for (const ev of events) {
      if (typeof ev !== "string") throw badRequest("Webhook events must be strings!");
      if (!(BB_WEBHOOK_EVENTS as readonly string[]).includes(ev)) {
        throw badRequest(`Invalid webhook event: ${ev}! Webhook must be one of: ${BB_WEBHOOK_EVENTS.join(",")}`);
      }
    }
    // ServerRepository.addWebhook: dedup by URL, returns the existing row unchanged
    let row = this.webhooks.find((w) => w.url === url);
    if (!row) {
      row = { id: ++this.rowids.webhook, url, events: events as string[], created: Date.now() };
      this.webhooks.push(row);
    }
    return success("Successfully created webhook!", this.webhookJson(row));
  }

  private async deleteWebhook(ctx: Ctx): Promise<Reply> {
    const id = Number.parseInt(ctx.params.id ?? "", 10);
    // getWebhooks({id}) ignores a falsy id (NaN, 0) and returns every webhook
    const found = id ? this.webhooks.filter((w) => w.id === id) : this.webhooks;
    if (found.length === 0) throw notFound("Webhook does not exist!");
    if (!id) throw unhandled("Failed to delete webhook! No URL or ID provided!");
    this.webhooks = this.webhooks.filter((w) => w.id !== id);
    return success("Successfully deleted webhook!");
  }
}

interface Ctx {
  params: Record<string, string>;
  query: Record<string, string>;
  body: Record<string, unknown>;
  files: Record<string, UploadedFile>;
  rawBody: unknown;
}

/** V1/utils.ts parseWithQuery (lower-cases everything) */
function parseWithQuery(q: unknown): string[] {
  if (q == null) return [];
  let out: string[] = [];
  if (typeof q === "string") out = q.split(",").map((e) => e.trim()).filter(Boolean);
  else if (Array.isArray(q)) out = q.filter((e): e is string => typeof e === "string").map((e) => e.trim()).filter(Boolean);
  return out.map((e) => e.toLowerCase());
}

function reactionText(reaction: string, target: BBMessageRecord | undefined): string {
  let what = `“${target?.text ?? ""}”`;
  const att = target && (target.text ?? "") === "" ? target.attachments[0] : undefined;
  if (att) {
    const mime = att.mimeType ?? "";
    what = mime.startsWith("image")
      ? "an image"
      : mime.startsWith("video")
        ? "a movie"
        : mime.startsWith("audio") || (att.uti ?? "").includes("coreaudio-format")
          ? "an audio message"
          : "an attachment";
  }
  // inferred: Messages writes "Removed a heart from “…”" for removals
  if (reaction.startsWith("-")) return `${NEGATIVE_REACTION_TEXT[reaction] ?? "Removed a reaction"} from ${what}`;
  if (reaction === "sticker") return "Reacted with a sticker";
  return `${REACTION_TEXT[reaction] ?? reaction} ${what}`;
}

/** Node exec error text for a failed osascript (ActionHandler never shortens it: `msg instanceof String` is false). */
function osascriptError(script: string[], detail: string): string {
  const cmd = `osascript ${script.map((l) => `-e "${l.replace(/"/g, '\\"')}"`).join(" ")}`;
  return `Command failed: ${cmd}\n${detail}\n`;
}

function appleScriptUnknownChatError(chatGuid: string): string {
  const address = chatGuid.split(";").pop() ?? chatGuid;
  // sendMessageFallback refuses group chats, and that is the error that surfaces
  if (address.startsWith("chat")) return "Can't use the send message (fallback) script to text a group chat!";
  const service = chatGuid.includes(";") ? (chatGuid.split(";")[0] ?? "iMessage") : "iMessage";
  return osascriptError(
    [
      'tell application "Messages"',
      `set targetService to 1st account whose service type = ${service}`,
      `set targetBuddy to participant "${address}" of targetService`,
      'send "…" to targetBuddy',
      "end tell",
    ],
    `154:215: execution error: Messages got an error: Can’t get participant "${address}" of account id "FAKE-ACCOUNT". (-1728)`,
  );
}

function appleScriptAnyServiceError(chatGuid: string): string {
  const address = chatGuid.split(";").pop() ?? chatGuid;
  return osascriptError(
    [
      'tell application "Messages"',
      "set targetService to 1st account whose service type = any",
      `set targetBuddy to participant "${address}" of targetService`,
      'send "…" to targetBuddy',
      "end tell",
    ],
    "53:93: execution error: Messages got an error: Can’t make any into type constant. (-1700)",
  );
}

/** A tiny evaluator for `where` items of POST /message/query (TypeORM fragments on chat.db columns). */
function whereFilter(w: { statement: string; args: unknown }): (m: BBMessageRecord) => boolean {
  const re =
    /^\s*(message|handle|chat)\.(\w+)\s*(=|==|!=|<>|>=|<=|>|<|like|not like|in)\s*(\(\s*:\.\.\.(\w+)\s*\)|:(\w+)|'([^']*)'|(-?\d+(?:\.\d+)?))\s*(collate nocase)?\s*$/i;
  const m = re.exec(w.statement ?? "");
  if (!m) throw unhandled(`SQLITE_ERROR: the fake cannot evaluate where statement: ${w.statement}`);
  const [, table = "", column = "", opRaw = "", , spreadName, paramName, strLit, numLit, nocase] = m;
  const args = (w.args ?? {}) as Record<string, unknown>;
  const value: unknown = spreadName
    ? args[spreadName]
    : paramName
      ? args[paramName]
      : strLit !== undefined
        ? strLit
        : Number(numLit);
  const APPLE_EPOCH_MS = 978307200000;
  const col = (rec: BBMessageRecord): unknown => {
    const key = `${table.toLowerCase()}.${column.toLowerCase()}`;
    switch (key) {
      case "message.rowid":
        return rec.originalROWID;
      case "message.guid":
        return rec.guid;
      case "message.text":
        return rec.text;
      case "message.handle_id":
        return rec.handleId;
      case "message.is_from_me":
        return rec.isFromMe ? 1 : 0;
      case "message.error":
        return rec.error;
      case "message.item_type":
        return rec.itemType;
      case "message.date":
        return (rec.dateCreated - APPLE_EPOCH_MS) * 1e6;
      case "message.associated_message_guid":
        return rec.associatedMessageGuid;
      case "message.thread_originator_guid":
        return rec.threadOriginatorGuid;
      case "message.subject":
        return rec.subject;
      case "handle.id":
        return rec.handle?.address ?? null;
      case "chat.guid":
        return rec.chats[0]?.guid ?? null;
      case "chat.chat_identifier":
        return rec.chats[0]?.chatIdentifier ?? null;
      default:
        throw unhandled(`SQLITE_ERROR: no such column: ${table}.${column}`);
    }
  };
  const op = opRaw.toLowerCase();
  const ci = !!nocase;
  const norm = (v: unknown) => (ci && typeof v === "string" ? v.toLowerCase() : v);
  const likeRe = (pattern: string) =>
    new RegExp(`^${pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/%/g, ".*").replace(/_/g, ".")}$`, "is");
  return (rec) => {
    const a = norm(col(rec));
    const b = norm(value);
    if (a === null || a === undefined) return false;
    switch (op) {
      case "=":
      case "==":
        return a == b; // eslint-disable-line eqeqeq
      case "!=":
      case "<>":
        return a != b; // eslint-disable-line eqeqeq
      case ">":
        return (a as number) > (b as number);
      case ">=":
        return (a as number) >= (b as number);
      case "<":
        return (a as number) < (b as number);
      case "<=":
        return (a as number) <= (b as number);
      case "like":
        return likeRe(String(b)).test(String(a));
      case "not like":
        return !likeRe(String(b)).test(String(a));
      case "in":
        return Array.isArray(b) && b.map(norm).some((x) => x == a); // eslint-disable-line eqeqeq
      default:
        return false;
    }
  };
}

export async function startFakeBlueBubbles(opts: FakeBBOptions = {}): Promise<FakeBlueBubbles> {
  const fake = new FakeBlueBubblesImpl(opts);
  await fake.listen();
  return fake;
}
