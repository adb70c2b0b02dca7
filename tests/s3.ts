import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { resetConfig } from "../server/kernel/config";
import { resetStorage } from "../server/storage";

// An S3-compatible server for tests: s3rver (pure JavaScript, path-style, credentials
// S3RVER/S3RVER) on a loopback port, in a temporary directory, with one bucket. s3rver checks
// the access key ID but not signature V4, so a wrong secret with the right key ID is accepted.

interface S3rverOptions {
  port: number;
  address: string;
  directory: string;
  silent: boolean;
  configureBuckets: { name: string }[];
}

interface S3rverInstance {
  httpServer?: Server;
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

// s3rver ships no type declarations.
const S3rver = createRequire(import.meta.url)("s3rver") as new (options: S3rverOptions) => S3rverInstance;

export interface S3Server {
  /** The STORAGE_URL value for the bucket. */
  url: string;
  endpoint: string;
  bucket: string;
  /** STORAGE_URL and credentials, for process.env or a child process. */
  env: Record<string, string>;
  /** Stops the server (open connections are cut) and removes its directory; again, nothing. */
  stop(): Promise<void>;
}

/**
 * Starts s3rver on 127.0.0.1 with `bucket` created: on a free port unless `port` is given, in a
 * new temporary directory (removed by stop) unless `directory` is given (kept, so a server
 * started again on it finds the same objects).
 */
export async function startS3(options: { bucket?: string; port?: number; directory?: string } = {}): Promise<S3Server> {
  const bucket = options.bucket ?? "relay-test";
  const directory = options.directory ?? (await mkdtemp(path.join(os.tmpdir(), "relay-s3rver-")));
  const server = new S3rver({ port: options.port ?? 0, address: "127.0.0.1", directory, silent: true, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const url = `s3://${bucket}?endpoint=${endpoint}&region=us-east-1&path_style=true`;
  let stopped = false;
  return {
    url,
    endpoint,
    bucket,
    env: { STORAGE_URL: url, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" },
    async stop() {
      if (stopped) return;
      stopped = true;
      // Open keep-alive connections and streams would hold close() up.
      server.httpServer?.closeAllConnections();
      await server.close();
      if (!options.directory) await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Makes this process's config() and storage() follow `env` (set on process.env; undefined
 * deletes a variable), e.g. startS3()'s env; returns what puts everything back as it was.
 */
export function useStorageEnv(env: Record<string, string | undefined>): () => void {
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetConfig();
    resetStorage();
  };
  apply(env);
  return () => apply(before);
}
