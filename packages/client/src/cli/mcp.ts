import { buildUrl } from "../http.js";
import { readServerSentEvents } from "../sse.js";
import { UsageError } from "./args.js";

// Each newline-delimited JSON-RPC message on stdin is POSTed to /api/mcp with the login's key, and each message of the
// answer is written to stdout as one line (stdout carries nothing else). Whatever goes wrong on the way is answered as a
// JSON-RPC error with the request's id, so the app shows it, and the next message is served as usual.

type Json = Record<string, unknown>;
type Id = string | number | null;

export interface McpProxyOptions {
  baseUrl: string;
  /** Missing: every request is answered with an error saying how to log in. */
  apiKey: string | undefined;
  stdin: AsyncIterable<Uint8Array | string>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** JSON-RPC's codes for a message that is not JSON, or not a request; -32000 (a server error) for what the HTTP exchange ended with. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const SERVER_ERROR = -32000;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isRequest = (m: Json) => typeof m.method === "string" && "id" in m && m.id !== null;

async function* lines(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of input) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
    }
  }
  buffer += decoder.decode();
  if (buffer) yield buffer.replace(/\r$/, "");
}

/** When stdin ends, the requests under way are answered first. */
export async function serveMcpOverStdio(options: McpProxyOptions): Promise<void> {
  const { stdout, stderr, signal } = options;
  let endpoint: string;
  try {
    endpoint = buildUrl(options.baseUrl, "/api/mcp");
  } catch {
    throw new UsageError(`the base URL must be a URL such as http://localhost:3000, not '${options.baseUrl}'`);
  }
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const inFlight = new Map<string, AbortController>();
  const pending = new Set<Promise<void>>();
  // Set by the server's answers: the protocol version initialize agreed on, and a session if one is ever handed out.
  let protocolVersion: string | undefined;
  let sessionId: string | undefined;

  const write = (message: unknown) => stdout(`${JSON.stringify(message)}\n`);
  const errorFor = (id: Id, code: number, message: string, data?: unknown) =>
    write({ jsonrpc: "2.0", id, error: { code, message, ...(data === undefined ? {} : { data }) } });

  /** A notification's failure is only logged. */
  const failAll = (messages: Json[], code: number, message: string, data?: unknown) => {
    const requests = messages.filter(isRequest);
    if (!requests.length) stderr(`relay mcp: ${message}\n`);
    for (const m of requests) errorFor(m.id as Id, code, message, data);
  };

  /** An error the server could not tie to a request (id null) gets ours. */
  const relayMessage = (message: unknown, messages: Json[]) => {
    if (isObject(message) && message.id === null && isObject(message.error)) {
      const { code, message: text, data } = message.error as { code?: unknown; message?: unknown; data?: unknown };
      return failAll(messages, typeof code === "number" ? code : SERVER_ERROR, typeof text === "string" ? text : "The MCP server refused the request", data);
    }
    if (isObject(message) && isObject(message.result) && typeof message.result.protocolVersion === "string") protocolVersion = message.result.protocolVersion;
    write(message);
  };

  async function forward(body: string, messages: Json[]): Promise<void> {
    if (!options.apiKey) {
      return failAll(messages, SERVER_ERROR, "No API key: run `relay login --key sk_live_...` (or set RELAY_API_KEY) for the account whose lines the agent may use.");
    }
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    const ids = messages.filter(isRequest).map((m) => JSON.stringify(m.id));
    for (const id of ids) inFlight.set(id, abort);
    try {
      const headers: Record<string, string> = {
        authorization: `Bearer ${options.apiKey}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      };
      if (protocolVersion) headers["mcp-protocol-version"] = protocolVersion;
      if (sessionId) headers["mcp-session-id"] = sessionId;
      let response: Response;
      try {
        response = await fetchImpl(endpoint, { method: "POST", headers, body, signal: abort.signal, redirect: "manual" });
      } catch (err) {
        if (abort.signal.aborted) return; // canceled by the app, or the proxy is stopping: no answer is wanted
        const reason = (err as { cause?: { code?: string; message?: string } })?.cause;
        const detail = reason?.code ?? reason?.message ?? (err as Error)?.message ?? String(err);
        return failAll(messages, SERVER_ERROR, `Could not reach ${new URL(endpoint).origin} (${detail}). Is the Relay server running there?`, { url: endpoint });
      }
      sessionId = response.headers.get("mcp-session-id") ?? sessionId;
      const type = response.headers.get("content-type") ?? "";
      if (response.ok && type.includes("text/event-stream") && response.body) {
        for await (const event of readServerSentEvents(response.body, { signal: abort.signal })) {
          try {
            relayMessage(JSON.parse(event.data), messages);
          } catch {
            stderr(`relay mcp: skipped an event that is not JSON: ${event.data.slice(0, 200)}\n`);
          }
        }
        return;
      }
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      if (response.ok) {
        if (parsed === undefined) {
          // 202 Accepted: a notification or a response, nothing to answer.
          if (messages.some(isRequest)) failAll(messages, SERVER_ERROR, `The MCP server answered HTTP ${response.status} without a JSON-RPC answer`);
          return;
        }
        for (const message of Array.isArray(parsed) ? parsed : [parsed]) relayMessage(message, messages);
        return;
      }
      // A refusal before MCP: the /v1 error envelope (401 invalid_api_key, 413 request_too_large,
      // 429...), or the SDK's own JSON-RPC error (406, 415...), or a proxy's page.
      if (isObject(parsed) && parsed.jsonrpc === "2.0") return relayMessage(parsed, messages);
      const envelope = isObject(parsed) && isObject(parsed.error) ? (parsed as { error: { code?: unknown; message?: unknown }; request_id?: unknown }) : null;
      const code = typeof envelope?.error.code === "string" ? envelope.error.code : `http_${response.status}`;
      const message = typeof envelope?.error.message === "string" ? envelope.error.message : `HTTP ${response.status} from ${endpoint}`;
      const hint = response.status === 401 ? " Log in again with a valid key: relay login --key sk_live_..." : "";
      failAll(messages, SERVER_ERROR, `${code}: ${message}${hint}`, { http_status: response.status, ...(envelope ?? { body: text.slice(0, 500) }) });
    } catch (err) {
      if (abort.signal.aborted) return;
      failAll(messages, SERVER_ERROR, `The answer from ${endpoint} broke off: ${(err as Error).message}`);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      for (const id of ids) if (inFlight.get(id) === abort) inFlight.delete(id);
    }
  }

  function handle(line: string): void {
    if (!line.trim()) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return errorFor(null, PARSE_ERROR, "Parse error: each line must be one JSON-RPC message");
    }
    const messages = (Array.isArray(parsed) ? parsed : [parsed]).filter(isObject);
    if (!messages.length || (Array.isArray(parsed) && messages.length !== parsed.length)) {
      return errorFor(null, INVALID_REQUEST, "Invalid Request: a JSON-RPC message is an object");
    }
    // A request the app gave up on (its timeout, the user's stop): its HTTP request is dropped,
    // so the server stops waiting too; it gets no answer, as MCP asks.
    const rest = messages.filter((m) => {
      if (m.method !== "notifications/cancelled") return true;
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      inFlight.get(JSON.stringify(id))?.abort();
      return false;
    });
    if (!rest.length) return;
    const task = forward(JSON.stringify(rest.length === 1 ? rest[0] : rest), rest).catch((err: unknown) => {
      stderr(`relay mcp: ${(err as Error).stack ?? String(err)}\n`);
    });
    pending.add(task);
    void task.finally(() => pending.delete(task));
  }

  stderr(`relay mcp: serving the MCP tools of ${endpoint} on stdio${options.apiKey ? "" : " (no API key: every request will be refused)"}\n`);
  // Stopping (Ctrl-C) ends the read of stdin too, which would otherwise keep the process alive.
  const source = options.stdin[Symbol.asyncIterator]();
  const stop = new Promise<void>((resolve) => {
    const onStop = () => {
      void source.return?.()?.catch(() => undefined);
      resolve();
    };
    if (signal?.aborted) onStop();
    else signal?.addEventListener("abort", onStop, { once: true });
  });
  const reading = (async () => {
    for await (const line of lines({ [Symbol.asyncIterator]: () => source })) {
      if (signal?.aborted) return;
      handle(line);
    }
  })();
  await Promise.race([reading, stop]);
  while (pending.size && !signal?.aborted) await Promise.race([Promise.all(pending), stop]);
}
