// Micro-benchmark of one indexed read through Prisma vs. the driver, on the configured database.
import { closeDatabase, database } from "../server/db";
import { seedDevAccount } from "../server/boot/dev-seed";

const N = Number(process.env.N ?? 2000);
const db = await database();
const seed = await seedDevAccount({ email: `mb-${Date.now()}@example.com`, lineHandle: `+1555${Date.now() % 10_000_000}` });
async function time(label: string, fn: () => Promise<unknown>) {
  for (let i = 0; i < 200; i++) await fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn();
  const us = Number(process.hrtime.bigint() - t) / 1000 / N;
  console.log(`${label.padEnd(40)} ${us.toFixed(0)} µs/op`);
}
await time("prisma line.findMany (2 rows)", () => db.prisma.line.findMany({ where: { accountId: seed.account.id }, take: 51 }));
await time("prisma line.findUnique by handle", () => db.prisma.line.findUnique({ where: { handle: seed.lineHandle } }));
await time("prisma $queryRaw select", () => db.prisma.$queryRaw`SELECT * FROM "Line" WHERE "accountId" = ${seed.account.id} LIMIT 51`);
if (db.pglite) {
  const pgl = db.pglite;
  await time("pglite.query select", () => pgl.query(`SELECT * FROM "Line" WHERE "accountId" = $1 LIMIT 51`, [seed.account.id]));
}
async function throughput(label: string, fn: () => Promise<unknown>) {
  const t = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  for (let i = 0; i < N / 10; i++) await Promise.all(Array.from({ length: 10 }, fn));
  const us = Number(process.hrtime.bigint() - t) / 1000 / N;
  const c = process.cpuUsage(cpu);
  console.log(`${label.padEnd(40)} ${us.toFixed(0)} µs wall/op, ${((c.user + c.system) / N).toFixed(0)} µs cpu/op (10 concurrent)`);
}
await throughput("prisma findMany x10", () => db.prisma.line.findMany({ where: { accountId: seed.account.id }, take: 51 }));
await throughput("prisma $queryRaw x10", () => db.prisma.$queryRaw`SELECT * FROM "Line" WHERE "accountId" = ${seed.account.id} LIMIT 51`);
await closeDatabase();
