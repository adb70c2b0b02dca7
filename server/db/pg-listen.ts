import pg from "pg";

// LISTEN needs a session outside the pool. `onDown` tells a caller it may have missed notifications.

export interface ListenHandlers {
  onPayload: (payload: string) => void;
  onUp?: () => void;
  onDown?: () => void;
}

export async function listen(url: string, channel: string, handlers: ListenHandlers): Promise<void> {
  const connect = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: url });
    let failed = false;
    const fail = () => {
      if (failed) return;
      failed = true;
      handlers.onDown?.();
      client.removeAllListeners();
      void client.end().catch(() => undefined);
      setTimeout(() => void connect(), 1000).unref();
    };
    try {
      client.on("error", fail);
      client.on("end", fail);
      client.on("notification", (n) => {
        if (n.channel === channel && n.payload) handlers.onPayload(n.payload);
      });
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      handlers.onUp?.();
    } catch {
      fail();
    }
  };
  await connect();
}
