import { z } from "zod";
import { type BodySink, collectBytes, mediaType } from "../http";
import { BlueBubblesError } from "./errors";
import { type BlueBubblesClientOptions, type BlueBubblesConnection, createRequester, type RequestSpec } from "./requester";
import {
  BBChatSchema,
  BBMessageSchema,
  BBServerInfoSchema,
  BBWebhookSchema,
  type BBChat,
  type BBMessage,
  type BBReaction,
  type BBServerInfo,
  type BBWebhook,
} from "./schemas";

export * from "./schemas";
export * from "./errors";

// The BlueBubbles Server API as this service uses it. It reports what happened; whether a
// failure is permanent is the platform layer's decision.

type SendMethod = "apple-script" | "private-api";

export interface BlueBubblesClient {
  ping(): Promise<void>;
  serverInfo(): Promise<BBServerInfo>;
  /** The response echoes tempGuid. */
  sendText(
    input: {
      chatGuid: string;
      tempGuid: string;
      message: string;
      method: SendMethod;
      selectedMessageGuid?: string;
      partIndex?: number;
      subject?: string;
      effectId?: string;
    },
    timeoutMs: number,
  ): Promise<BBMessage>;
  /** Multipart, file part "attachment". The response does NOT echo tempGuid. */
  sendAttachment(
    input: {
      chatGuid: string;
      tempGuid: string;
      name: string;
      mimeType: string;
      bytes: Uint8Array;
      method: SendMethod;
      isAudioMessage?: boolean;
      selectedMessageGuid?: string;
      partIndex?: number;
    },
    timeoutMs: number,
  ): Promise<BBMessage>;
  /** The chat with `participants` and `messages` (the sent message, tempGuid injected). */
  newChat(
    input: { addresses: string[]; message?: string; tempGuid?: string; method: SendMethod; service?: "iMessage" | "SMS" },
    timeoutMs: number,
  ): Promise<BBChat>;
  react(
    input: { chatGuid: string; selectedMessageGuid: string; reaction: BBReaction; partIndex?: number },
    timeoutMs: number,
  ): Promise<BBMessage>;
  startTyping(chatGuid: string): Promise<void>;
  /** On 1.9.9 master the server's DELETE handler calls startTyping (bug, fixed on development). */
  stopTyping(chatGuid: string): Promise<void>;
  markRead(chatGuid: string): Promise<void>;
  /** An unknown chatGuid answers a plain-text 404 → BlueBubblesError kind "http", status 404. */
  queryMessages(input: {
    chatGuid?: string;
    after?: number;
    before?: number;
    limit?: number;
    offset?: number;
    sort?: "ASC" | "DESC";
    with?: string[];
  }): Promise<{ messages: BBMessage[]; total: number | null }>;
  /** With its chats and attachments; null on 404. */
  getMessage(guid: string): Promise<BBMessage | null>;
  /** Streamed into `sink` (in memory without one); over maxBytes → "too_large"; timeoutMs covers the sink too. */
  downloadAttachment<R = Uint8Array>(guid: string, opts: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }): Promise<{ content: R; mimeType: string | null }>;
  iMessageAvailable(address: string): Promise<boolean>;
  listWebhooks(): Promise<BBWebhook[]>;
  /** The server dedups by URL and returns an existing row unchanged (delete first to change events). */
  addWebhook(url: string, events: string[]): Promise<BBWebhook>;
  /** An unknown id answers 404 "Webhook does not exist!". */
  deleteWebhook(id: number): Promise<void>;
}

const DEFAULT_DOWNLOAD_TIMEOUT_MS = 120_000;

/** The named fields of `o` that are set, in that order: a JSON body without undefined keys. */
function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;
}

export function createBlueBubblesClient(conn: BlueBubblesConnection, opts: BlueBubblesClientOptions = {}): BlueBubblesClient {
  const { defaultTimeout, failure, send, readEnvelope, call } = createRequester(conn, opts);
  const anything = z.unknown();
  const enc = encodeURIComponent;
  const data = async <S extends z.ZodType>(spec: Omit<RequestSpec, "timeoutMs"> & { timeoutMs?: number }, schema: S): Promise<z.output<S>> =>
    (await call({ ...spec, timeoutMs: spec.timeoutMs ?? defaultTimeout }, schema)).data;

  return {
    async ping() {
      await data({ method: "GET", path: "/api/v1/ping" }, anything);
    },

    async serverInfo() {
      return data({ method: "GET", path: "/api/v1/server/info" }, BBServerInfoSchema);
    },

    async sendText(input, timeoutMs) {
      const json = pick(input, ["chatGuid", "tempGuid", "message", "method", "selectedMessageGuid", "partIndex", "subject", "effectId"]);
      return data({ method: "POST", path: "/api/v1/message/text", json, timeoutMs }, BBMessageSchema);
    },

    async sendAttachment(input, timeoutMs) {
      const form = new FormData();
      // Copy into a fresh ArrayBuffer-backed view (a Blob part must not be a SharedArrayBuffer view).
      const bytes = new Uint8Array(input.bytes.byteLength);
      bytes.set(input.bytes);
      form.append("attachment", new Blob([bytes], { type: input.mimeType }), input.name);
      form.append("chatGuid", input.chatGuid);
      form.append("tempGuid", input.tempGuid);
      form.append("name", input.name);
      form.append("method", input.method);
      if (input.isAudioMessage) form.append("isAudioMessage", "true");
      if (input.selectedMessageGuid !== undefined) form.append("selectedMessageGuid", input.selectedMessageGuid);
      if (input.partIndex !== undefined) form.append("partIndex", String(input.partIndex));
      return data({ method: "POST", path: "/api/v1/message/attachment", form, timeoutMs }, BBMessageSchema);
    },

    async newChat(input, timeoutMs) {
      const json = pick(input, ["addresses", "message", "tempGuid", "method", "service"]);
      return data({ method: "POST", path: "/api/v1/chat/new", json, timeoutMs }, BBChatSchema);
    },

    async react(input, timeoutMs) {
      const json = pick(input, ["chatGuid", "selectedMessageGuid", "reaction", "partIndex"]);
      return data({ method: "POST", path: "/api/v1/message/react", json, timeoutMs }, BBMessageSchema);
    },

    async startTyping(chatGuid) {
      await data({ method: "POST", path: `/api/v1/chat/${enc(chatGuid)}/typing` }, anything);
    },

    async stopTyping(chatGuid) {
      await data({ method: "DELETE", path: `/api/v1/chat/${enc(chatGuid)}/typing` }, anything);
    },

    async markRead(chatGuid) {
      await data({ method: "POST", path: `/api/v1/chat/${enc(chatGuid)}/read` }, anything);
    },

    async queryMessages(input) {
      for (const key of ["after", "before", "limit", "offset"] as const) {
        const v = input[key];
        if (v !== undefined && !Number.isFinite(v)) throw new TypeError(`queryMessages: ${key} must be a finite number`);
      }
      // after/before must be JSON numbers: the repository only converts `typeof after === "number"` to a Date.
      const json = pick(input, ["chatGuid", "after", "before", "limit", "offset", "sort", "with"]);
      const { data: messages, envelope } = await call({ method: "POST", path: "/api/v1/message/query", json, timeoutMs: defaultTimeout }, z.array(BBMessageSchema));
      const meta = envelope.metadata && typeof envelope.metadata === "object" ? (envelope.metadata as Record<string, unknown>) : null;
      const total = typeof meta?.total === "number" ? meta.total : null;
      return { messages, total };
    },

    async getMessage(guid) {
      try {
        return await data({ method: "GET", path: `/api/v1/message/${enc(guid)}`, query: { with: "chats,attachments" } }, BBMessageSchema);
      } catch (err) {
        if (err instanceof BlueBubblesError && err.kind === "http" && err.status === 404) return null;
        throw err;
      }
    },

    async downloadAttachment<R = Uint8Array>(guid: string, { maxBytes, timeoutMs, sink }: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }) {
      const spec: RequestSpec = {
        method: "GET",
        path: `/api/v1/attachment/${enc(guid)}/download`,
        query: { original: "true" },
        timeoutMs: timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS,
      };
      const res = await send(spec, maxBytes, (sink ?? collectBytes) as BodySink<unknown>);
      if (res.status < 200 || res.status >= 300) {
        // Errors come as envelopes (404 "Attachment does not exist!", 500 "… does not exist in disk!").
        readEnvelope(spec, res);
        throw failure(spec, "garbage", `HTTP ${res.status} with a success envelope`, { status: res.status });
      }
      return { content: res.sunk as R, mimeType: mediaType(res.headers) };
    },

    async iMessageAvailable(address) {
      const { available } = await data({ method: "GET", path: "/api/v1/handle/availability/imessage", query: { address } }, z.object({ available: z.boolean() }));
      return available;
    },

    async listWebhooks() {
      return data({ method: "GET", path: "/api/v1/webhook" }, z.array(BBWebhookSchema));
    },

    async addWebhook(url, events) {
      return data({ method: "POST", path: "/api/v1/webhook", json: { url, events } }, BBWebhookSchema);
    },

    async deleteWebhook(id) {
      await data({ method: "DELETE", path: `/api/v1/webhook/${enc(String(id))}` }, anything);
    },
  };
}
