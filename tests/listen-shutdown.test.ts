import { describe, expect, it } from "vitest";
import { GET } from "@/app/v1/[[...path]]/route";
import { beginShutdown } from "@/server/kernel/shutdown";
import { db, inbound, makeAccount, phone } from "./helpers";

// A listen session whose stream the server ended (it is stopping) keeps hearing events, so its
// client resumes on the restarted server with nothing lost; only a client that leaves switches
// its session off (tests/listen.test.ts). Its own file: shutting down is for good.

describe("GET /v1/listen across a server stop", () => {
  it("keeps the session's events for the client's reconnect", async () => {
    const f = await makeAccount();
    const res = await GET(new Request("http://localhost/v1/listen?events=message.received", { headers: { authorization: `Bearer ${f.key}` } }));
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = (await reader.read()).value!;
    const session = JSON.parse(/data: (.*)/.exec(first)![1]!).session as string;
    beginShutdown();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    expect(text).toContain("server shutting down");
    const prisma = await db();
    await new Promise((r) => setTimeout(r, 200)); // the stream's end is recorded
    await inbound(f, phone(), "during the restart");
    const kept = await prisma.webhookDelivery.findMany({ where: { webhook: { url: `stream:${session}` } }, select: { status: true, payload: true } });
    expect(kept).toEqual([{ status: "pending", payload: expect.objectContaining({ text: "during the restart" }) }]);
  });
});
