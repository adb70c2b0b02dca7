import { ConnectionError } from "./errors.js";

export interface ServerSentEvent {
  id?: string;
  event: string;
  data: string;
}

// A stream silent for `idleTimeoutMs` (not even a keep-alive) is cancelled with a ConnectionError:
// a half-open connection (a laptop that slept, a NAT that forgot it) would wait forever.
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  { signal, idleTimeoutMs }: { signal?: AbortSignal; idleTimeoutMs?: number } = {},
): AsyncGenerator<ServerSentEvent, void, undefined> {
  const reader = body.getReader();
  const read = async () => {
    if (!idleTimeoutMs) return reader.read();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ConnectionError({ type: "connection_error", code: "stream_idle", message: `No data for ${idleTimeoutMs} ms: the connection is presumed dead` })),
        idleTimeoutMs,
      );
    });
    try {
      return await Promise.race([reader.read(), silent]);
    } finally {
      clearTimeout(timer);
    }
  };
  const decoder = new TextDecoder();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  if (signal?.aborted) onAbort();
  signal?.addEventListener("abort", onAbort, { once: true });
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replaceAll("\r\n", "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const message: ServerSentEvent = { event: "message", data: "" };
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line === "" || line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") data.push(value);
          else if (field === "event") message.event = value;
          else if (field === "id") message.id = value;
        }
        if (data.length === 0) continue;
        message.data = data.join("\n");
        yield message;
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => undefined);
  }
}
