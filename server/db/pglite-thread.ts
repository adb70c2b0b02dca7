import { Worker } from "node:worker_threads";
import { messages, Mutex, type ParserOptions, type Results, types } from "@electric-sql/pglite";

// In the server's thread PGlite's query execution took a third of the CPU of every write: here it
// runs in a worker (the second core). Values come back as text and are parsed here with PGlite's
// parsers, so results are the same as in-process.

/** The worker: plain JavaScript, evaluated (it must load PGlite from node_modules at run time, outside any bundle). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
let db;
let raw = {};
const identity = (x) => x;
function plainError(err) {
  const out = { message: String(err && err.message), name: err && err.name, isDatabaseError: !!(err && err.severity !== undefined && err.code !== undefined) };
  if (err && typeof err === "object") {
    for (const [k, v] of Object.entries(err)) {
      if (k === "queryOptions" || k === "params" || typeof v === "function") continue;
      try { structuredClone(v); out[k] = v; } catch {}
    }
  }
  return out;
}
async function handle(m) {
  switch (m.op) {
    case "query": {
      if (m.begin) await db.exec("BEGIN");
      const r = await db.query(m.text, m.params, { rowMode: "array", parsers: raw });
      return { rows: r.rows, fields: r.fields, affectedRows: r.affectedRows };
    }
    case "exec": {
      if (m.begin) await db.exec("BEGIN");
      const rs = await db.exec(m.text);
      return rs.map((r) => ({ rows: r.rows, fields: r.fields, affectedRows: r.affectedRows }));
    }
    case "raw":
      return await db.execProtocolRaw(m.bytes, { syncToFs: m.syncToFs });
    case "close":
      await db.close();
      return null;
  }
  throw new Error("unknown operation " + m.op);
}
(async () => {
  try {
    const { PGlite } = await import("@electric-sql/pglite");
    // A seed (a tar file from dumpDataDir) starts an in-memory database from that state.
    const seed = workerData.seedFile ? new Blob([require("node:fs").readFileSync(workerData.seedFile)]) : undefined;
    db = seed ? await PGlite.create({ loadDataDir: seed }) : await PGlite.create(workerData.dataDir || undefined);
    raw = Object.fromEntries(Object.keys(db.parsers).map((k) => [k, identity]));
  } catch (err) {
    parentPort.postMessage({ id: 0, error: plainError(err) });
    return;
  }
  parentPort.postMessage({ id: 0, result: null });
  parentPort.on("message", async (m) => {
    try {
      parentPort.postMessage({ id: m.id, result: await handle(m) });
    } catch (err) {
      parentPort.postMessage({ id: m.id, error: plainError(err) });
    }
  });
})();
`;

type Op =
  | { op: "query"; text: string; params: unknown[]; begin?: boolean }
  | { op: "exec"; text: string; begin?: boolean }
  | { op: "raw"; bytes: Uint8Array; syncToFs: boolean }
  | { op: "close" };

interface RawResult {
  rows: (string | null)[][];
  fields: { name: string; dataTypeID: number }[];
  affectedRows?: number;
}

interface PlainError {
  message: string;
  name?: string;
  isDatabaseError: boolean;
  [field: string]: unknown;
}

interface Reply {
  id: number;
  result?: unknown;
  error?: PlainError;
}

export interface QueryOptions {
  rowMode?: "object" | "array";
  parsers?: ParserOptions;
}

export interface ThreadTransaction {
  query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  exec(text: string): Promise<Results[]>;
  rollback(): Promise<void>;
  readonly closed: boolean;
}

const RAW_IDLE_MS = 10_000;

/** [type byte, offset, length] of each message in a protocol chunk (a type byte, then a 4-byte length counting itself). */
function* protocolMessages(data: Uint8Array): Generator<[number, number, number]> {
  let at = 0;
  while (at + 5 <= data.length) {
    const length = ((data[at + 1]! << 24) | (data[at + 2]! << 16) | (data[at + 3]! << 8) | data[at + 4]!) >>> 0;
    yield [data[at]!, at, length];
    at += 1 + length;
  }
}

/** Whether a client's chunk ends an exchange: its last message is Sync, a simple Query or Terminate (or it is the startup packet). */
function endsExchange(message: Uint8Array): boolean {
  if (message[0] === 0) return true; // startup and SSL/cancel requests: no type byte
  let last = -1;
  for (const [type] of protocolMessages(message)) last = type;
  return last === 0x53 || last === 0x51 || last === 0x58;
}

function toError(e: PlainError): Error {
  if (!e.isDatabaseError) return Object.assign(new Error(e.message), { name: e.name ?? "Error" });
  const err = new messages.DatabaseError(e.message, 0, "error");
  for (const [k, v] of Object.entries(e)) if (k !== "isDatabaseError" && k !== "message") (err as unknown as Record<string, unknown>)[k] = v;
  return err;
}

export interface EmbeddedPg {
  query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  exec(text: string): Promise<Results[]>;
  transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export class PGliteThread implements EmbeddedPg {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  #closed = false;
  #failure: Error | null = null;
  /** Held by every statement and transaction, as PGlite's own transaction mutex. */
  readonly #txMutex = new Mutex();
  /** Held by every round trip and by runExclusive (the wire-protocol socket), as PGlite's query mutex. */
  readonly #queryMutex = new Mutex();
  readonly #parsers: ParserOptions = { ...types.parsers };
  /** From the last ReadyForQuery the wire-protocol socket saw: 'I' idle, 'T' in a transaction, 'E' failed one. */
  #rawTxStatus = "I";
  readonly waitReady: Promise<void>;

  private constructor(dataDir: string | undefined, seedFile: string | undefined) {
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { dataDir, seedFile } });
    this.#worker.unref();
    let ready!: (v: unknown) => void;
    let failed!: (e: Error) => void;
    this.waitReady = new Promise<unknown>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    }).then(() => undefined);
    this.#pending.set(0, { resolve: ready, reject: failed });
    this.#worker.on("message", (reply: Reply) => {
      const waiter = this.#pending.get(reply.id);
      if (!waiter) return;
      this.#pending.delete(reply.id);
      if (reply.error) waiter.reject(toError(reply.error));
      else waiter.resolve(reply.result);
    });
    const fail = (err: Error) => {
      this.#failure = err;
      this.#closed = true;
      for (const { reject } of this.#pending.values()) reject(err);
      this.#pending.clear();
    };
    this.#worker.on("error", (err) => fail(err instanceof Error ? err : new Error(String(err))));
    this.#worker.on("exit", (code) => fail(new Error(`the PGlite thread exited (code ${code})`)));
  }

  static async create(dataDir?: string, options: { seedFile?: string } = {}): Promise<PGliteThread> {
    const db = new PGliteThread(dataDir, options.seedFile);
    try {
      await db.waitReady;
      // As PGlite does at start: parsers for the array types of the built-in element types.
      const arrays = await db.query<{ oid: number; typarray: number }>(`
        SELECT b.oid, b.typarray FROM pg_catalog.pg_type a
        LEFT JOIN pg_catalog.pg_type b ON b.oid = a.typelem
        WHERE a.typcategory = 'A' GROUP BY b.oid, b.typarray ORDER BY b.oid`);
      for (const { oid, typarray } of arrays.rows) {
        db.#parsers[typarray] = (value: string) => types.arrayParser(value, db.#parsers[oid]!, typarray);
      }
    } catch (err) {
      await db.#worker.terminate();
      throw err;
    }
    return db;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #call(message: Op, transfer?: ArrayBuffer[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#failure ?? new Error("the PGlite thread is closed"));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ...message }, transfer);
    });
  }

  #parse<T>(raw: RawResult, options?: QueryOptions): Results<T> {
    const custom = options?.parsers;
    // PGlite calls a parser with the value and its type ID (array parsers use the latter).
    const parsers = raw.fields.map((f) => (custom?.[f.dataTypeID] ?? this.#parsers[f.dataTypeID]) as ((x: string, typeId: number) => unknown) | undefined);
    const parseRow = (row: (string | null)[]) =>
      row.map((value, i) => {
        const parser = parsers[i];
        return value === null || !parser ? value : parser(value, raw.fields[i]!.dataTypeID);
      });
    let rows: unknown[];
    if (options?.rowMode === "array") {
      rows = raw.rows.map(parseRow);
    } else {
      rows = raw.rows.map((row) => {
        const values = parseRow(row);
        const object: Record<string, unknown> = {};
        raw.fields.forEach((f, i) => (object[f.name] = values[i]));
        return object;
      });
    }
    return { rows: rows as T[], fields: raw.fields, affectedRows: raw.affectedRows ?? 0 };
  }

  /** `begin`: open a transaction first, in the same round trip. */
  async #query<T>(text: string, params: unknown[] = [], options?: QueryOptions, begin = false): Promise<Results<T>> {
    // PGlite reads a statement's parameter count as 16 bits: past that its protocol parser
    // breaks (RangeError: Invalid array length) and every later query fails. Never send one.
    if (params.length > 65_535) throw new Error(`a statement with ${params.length} bind parameters was not sent (the protocol allows 65535)`);
    const raw = (await this.#queryMutex.runExclusive(() => this.#call({ op: "query", text, params, begin }))) as RawResult;
    return this.#parse<T>(raw, options);
  }

  async #exec(text: string, begin = false): Promise<Results[]> {
    return (await this.#queryMutex.runExclusive(() => this.#call({ op: "exec", text, begin }))) as Results[];
  }

  query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.#txMutex.runExclusive(() => this.#query<T>(text, params, options));
  }

  exec(text: string): Promise<Results[]> {
    return this.#txMutex.runExclusive(() => this.#exec(text));
  }

  /** BEGIN travels with the first statement: a round trip less per transaction, during which nothing else could run. */
  transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T> {
    return this.#txMutex.runExclusive(async () => {
      let begun = false;
      let closed = false;
      const open = () => {
        if (closed) throw new Error("Transaction is closed");
      };
      const first = () => {
        const begin = !begun;
        begun = true;
        return begin;
      };
      const tx: ThreadTransaction = {
        query: async <R>(text: string, params?: unknown[], options?: QueryOptions) => {
          open();
          return this.#query<R>(text, params, options, first());
        },
        exec: async (text: string) => {
          open();
          return this.#exec(text, first());
        },
        rollback: async () => {
          open();
          if (begun) await this.#exec("ROLLBACK");
          closed = true;
        },
        get closed() {
          return closed;
        },
      };
      try {
        const result = await fn(tx);
        if (!closed) {
          closed = true;
          if (begun) await this.#exec("COMMIT");
        }
        return result;
      } catch (err) {
        if (!closed) {
          closed = true;
          if (begun) await this.#exec("ROLLBACK");
        }
        throw err;
      }
    });
  }

  // The wire-protocol socket: a client's exchange (Parse, Bind, ... Sync) and its transactions span
  // chunks, and an app statement between them would replace its unnamed statement or run inside
  // its transaction. So the socket holds the lock until it is idle again or silent for RAW_IDLE_MS.

  #rawRelease: (() => void) | null = null;
  #rawAcquiring: Promise<void> | null = null;
  #rawIdle: NodeJS.Timeout | null = null;
  #rawUnitDone = true;

  async #holdForRaw(): Promise<void> {
    if (this.#rawIdle) clearTimeout(this.#rawIdle);
    this.#rawIdle = null;
    if (this.#rawRelease) return;
    this.#rawAcquiring ??= this.#txMutex.acquire().then((release) => {
      this.#rawRelease = release;
      this.#rawAcquiring = null;
    });
    await this.#rawAcquiring;
  }

  #endRawHold(): void {
    if (this.#rawIdle) clearTimeout(this.#rawIdle);
    this.#rawIdle = null;
    const release = this.#rawRelease;
    this.#rawRelease = null;
    release?.();
  }

  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.#holdForRaw();
    try {
      return await this.#queryMutex.runExclusive(fn);
    } finally {
      if (this.#rawUnitDone && this.#rawTxStatus === "I") this.#endRawHold();
      else this.#rawIdle = setTimeout(() => this.#endRawHold(), RAW_IDLE_MS).unref();
    }
  }

  async execProtocolRaw(message: Uint8Array, { syncToFs = true }: { syncToFs?: boolean } = {}): Promise<Uint8Array> {
    this.#rawUnitDone = endsExchange(message);
    const data = (await this.#call({ op: "raw", bytes: message, syncToFs })) as Uint8Array;
    this.#trackTxStatus(data);
    return data;
  }

  async execProtocolRawStream(message: Uint8Array, options: { syncToFs?: boolean; onRawData: (data: Uint8Array) => void }): Promise<void> {
    const data = await this.execProtocolRaw(message, options);
    if (data.length) options.onRawData(data);
  }

  isInTransaction(): boolean {
    return this.#rawTxStatus !== "I";
  }

  #trackTxStatus(data: Uint8Array): void {
    // Backend messages: a type byte and a 4-byte length (counting itself); ReadyForQuery is 'Z' with one status byte.
    for (const [type, at, length] of protocolMessages(data)) {
      if (type === 0x5a && length === 5 && at + 5 < data.length) this.#rawTxStatus = String.fromCharCode(data[at + 5]!);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#txMutex.runExclusive(() => this.#queryMutex.runExclusive(() => this.#call({ op: "close" })));
    } finally {
      this.#closed = true;
      await this.#worker.terminate();
    }
  }
}
