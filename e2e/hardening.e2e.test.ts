import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCli, freePort, freshPostgresDatabase, spawnStart, stopWithSigterm, waitUntilUp } from "./harness";

// Review findings of hardening round 4, replayed black-box against `npm start` on both
// databases: the approve / reject / cancel race on one held send, and a hostile Host header
// on the /v1 fast path.

const ROUNDS = 20;
const LINE = "+15550037000";
const CONTACT = "+15550037001";
const EMAIL = "hardening@example.com";

interface Server {
  base: string;
  owner: string;
  agent: string;
  dispose(): Promise<void>;
}

async function startServer(database: "pglite" | "postgresql"): Promise<Server> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-hardening-"));
  const pgDb = database === "postgresql" ? await freshPostgresDatabase("relay_hardening") : null;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    SIMULATOR_ENABLED: "true",
    NEXT_TELEMETRY_DISABLED: "1",
    DATA_DIR: dataDir,
    PUBLIC_URL: base,
    PORT: String(port),
    RATE_LIMIT_PER_HOUR: "1000000",
  };
  delete env.DATABASE_URL;
  delete env.DATABASE_SCHEMA;
  if (pgDb) env.DATABASE_URL = pgDb.url;
  const child: ChildProcess = spawnStart(port, env);
  await waitUntilUp(`${base}/api/health`, child, `npm start on ${database} did not come up`);
  adminCli(env, "account", "create", "--email", EMAIL, "--password", "hardening password 1");
  adminCli(env, "line", "create", "--account", EMAIL, "--handle", LINE, "--advanced");
  const owner = adminCli(env, "key", "create", "--account", EMAIL, "--name", "owner");
  const agent = adminCli(env, "key", "create", "--account", EMAIL, "--name", "agent", "--require-approval");
  return {
    base,
    owner,
    agent,
    async dispose() {
      await stopWithSigterm(child, "npm start");
      rmSync(dataDir, { recursive: true, force: true });
      await pgDb?.drop();
    },
  };
}

const call = async (s: Server, key: string, method: string, route: string, body?: unknown) => {
  const res = await fetch(`${s.base}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { id?: string; status?: string; error?: string | { code: string; request_id?: string }; data?: { id: string }[] } };
};

/** A GET with exactly this Host header, which fetch() would not let a caller set. */
function rawGet(base: string, target: string, host: string, key: string): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: target, method: "GET", setHost: false, headers: { host, authorization: `Bearer ${key}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe.each(["pglite", "postgresql"] as const)("hardening findings against npm start on %s", (database) => {
  let s: Server;

  beforeAll(async () => {
    s = await startServer(database);
    // The contact writes first, so the agent's sends pass the contact-first rule.
    for (const text of ["first", "second", "third"]) {
      const res = await fetch(`${s.base}/api/simulator/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.owner}`, "content-type": "application/json" },
        body: JSON.stringify({ line: LINE, from: CONTACT, text }),
      });
      expect(res.status).toBe(201);
    }
  });

  afterAll(() => s?.dispose());

  it(`approve, reject and cancel racing on one held send: exactly one wins, ${ROUNDS} rounds`, async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const held = await call(s, s.agent, "POST", "/v1/messages", { from: LINE, to: CONTACT, text: `round ${round}` });
      expect(held.status).toBe(200);
      const id = held.body.id!;
      const decisions = [
        { name: "approve", run: () => call(s, s.owner, "POST", `/v1/outbox/approve?id=${id}`) },
        { name: "reject", run: () => call(s, s.owner, "POST", `/v1/outbox/reject?id=${id}`) },
        { name: "cancel", run: () => call(s, s.agent, "DELETE", `/v1/outbox?id=${id}`) },
      ];
      // A different order each round, so each decision gets to start first.
      const order = decisions.map((_, i) => decisions[(i + round) % decisions.length]!);
      const answers = await Promise.all(order.map((d) => d.run().then((r) => ({ name: d.name, ...r }))));
      const winners = answers.filter((a) => a.status === 200);
      expect(winners, `round ${round}: ${JSON.stringify(answers.map((a) => [a.name, a.status]))}`).toHaveLength(1);
      for (const loser of answers.filter((a) => a.status !== 200)) expect(loser.status).toBe(409);
      const item = await call(s, s.owner, "GET", `/v1/outbox?id=${id}`);
      const winner = winners[0]!.name;
      if (winner === "approve") expect(["pending", "claimed", "sent"]).toContain(item.body.status);
      else expect(item.body).toMatchObject({ status: "failed", error: winner === "reject" ? "rejected" : "canceled" });
      outcomes.push(winner);
    }
    console.log(`${database}: ${ROUNDS} rounds, one winner each (${["approve", "reject", "cancel"].map((n) => `${n} ${outcomes.filter((o) => o === n).length}`).join(", ")})`);
  });

  it("reads the path and query from the request target, never from the Host header", async () => {
    const target = `/v1/messages?from=${encodeURIComponent(LINE)}&limit=2`;
    const plain = await rawGet(s.base, target, new URL(s.base).host, s.owner);
    expect(plain.status).toBe(200);
    const page = JSON.parse(plain.body) as { data: { id: string }[] };
    expect(page.data).toHaveLength(2);
    for (const host of ["h?limit=1&x=", "h/v1/lines?", "h#frag", "h:1/x?from=nope&"]) {
      const hostile = await rawGet(s.base, target, host, s.owner);
      expect(hostile.status, `Host: ${host}`).toBe(200);
      expect((JSON.parse(hostile.body) as { data: { id: string }[] }).data.map((m) => m.id), `Host: ${host}`).toEqual(page.data.map((m) => m.id));
    }
    // And the cached read that follows still serves the right page.
    const again = await rawGet(s.base, target, new URL(s.base).host, s.owner);
    expect((JSON.parse(again.body) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(page.data.map((m) => m.id));
  });
});
