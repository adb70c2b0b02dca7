import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it, vi } from "vitest";
import { hashKey } from "@/server/services/access/api-keys";
import { config, resetConfig } from "@/server/kernel/config";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { liveListenerReady, liveSubscriberCount } from "@/server/events/live";
import { newId } from "@/server/kernel/ids";
import { openStreams } from "@/server/services/webhooks/stream-slots";
import { db, gql, inbound, makeAccount, makeKey, phone, post, subscribe } from "./helpers";

// Subscriptions over server-sent events (GraphQL over SSE, distinct connections mode), read
// from the real route's streaming response.

afterAll(() => stopRunner());

// Small caps for the cap test; the other tests hold at most 2 subscriptions per key at once.
process.env.MAX_STREAMS_PER_KEY = "2";
process.env.MAX_STREAMS_PER_ACCOUNT = "3";
resetConfig();

const MESSAGES = `subscription($from: String, $to: String) { messageReceived(from: $from, to: $to) { id text sender chat { identifier } attachments { filename } } }`;
const OUTBOX = `subscription($from: String, $to: String, $id: String) { outboxItemUpdated(from: $from, to: $to, id: $id) { status outboxId item { error message { text } } } }`;

describe("GraphQL subscriptions over server-sent events", () => {
  it("messageReceived streams the caller's new inbound messages, and never another account's", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const subscribers = liveSubscriberCount();
    const mine = await subscribe(a.key, MESSAGES, { from: a.line.handle });
    expect(mine.response.status).toBe(200);
    expect(mine.response.headers.get("content-type")).toContain("text/event-stream");
    expect(mine.response.headers.get("request-id")).toMatch(/^req_/);
    const theirs = await subscribe(b.key, MESSAGES);
    expect(liveSubscriberCount()).toBe(subscribers + 2);

    const alice = phone();
    const sent = await inbound(a, alice, "live!", { attachment: { filename: "a.txt", mime_type: "text/plain", content_base64: "aGk=" } });
    expect(await mine.next()).toEqual({
      event: "next",
      data: { data: { messageReceived: { id: sent.id, text: "live!", sender: alice, chat: { identifier: alice }, attachments: [{ filename: "a.txt" }] } } },
    });
    const own = await inbound(b, phone(), "b's own");
    // The first event b sees is its own message: a's was published before it and filtered out.
    expect((await theirs.next()).data?.data?.messageReceived.id).toBe(own.id);

    await mine.close();
    await theirs.close();
    await vi.waitFor(() => expect(liveSubscriberCount()).toBe(subscribers));
  });

  it("chatActivity streams a chat's reactions, typing and read receipts, and never another account's", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const alice = phone();
    const message = await inbound(a, alice, "react to me");
    const chatId = (await gql(a.key, `{ chats(from: "${a.line.handle}", first: 1) { edges { node { id } } } }`)).body.data.chats.edges[0].node.id;
    const ACTIVITY = `subscription($from: String, $to: String) { chatActivity(from: $from, to: $to) { kind chatId lineId typing } }`;
    const mine = await subscribe(a.key, ACTIVITY, { from: a.line.handle, to: alice });
    const theirs = await subscribe(b.key, ACTIVITY);
    const sim = (path: string, body: Record<string, unknown>) => post(`/api/simulator/${path}`, a.key, { line: a.line.handle, from: alice, ...body });
    expect((await sim("reactions", { message_id: message.id, type: "love", added: true })).status).toBeLessThan(300);
    expect(await mine.next()).toEqual({ event: "next", data: { data: { chatActivity: { kind: "reaction", chatId, lineId: a.line.id, typing: null } } } });
    expect((await sim("typing", { is_typing: true })).status).toBeLessThan(300);
    expect((await mine.next()).data?.data?.chatActivity).toEqual({ kind: "typing", chatId, lineId: a.line.id, typing: true });
    expect((await sim("receipts", {})).status).toBeLessThan(300);
    expect((await mine.next()).data?.data?.chatActivity).toMatchObject({ kind: "receipt", chatId });
    // b's first event is its own typing: a's were filtered out.
    const bob = phone();
    await inbound(b, bob, "hi");
    expect((await post("/api/simulator/typing", b.key, { line: b.line.handle, from: bob, is_typing: false })).status).toBeLessThan(300);
    expect((await theirs.next()).data?.data?.chatActivity).toMatchObject({ kind: "typing", lineId: b.line.id, typing: false });
    await mine.close();
    await theirs.close();
  });

  it("narrows to one chat with `to`, and refuses filters naming what the caller may not read", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const [alice, bob] = [phone(), phone()];
    await inbound(a, alice, "first");
    const chat = await subscribe(a.key, MESSAGES, { from: a.line.handle, to: alice });
    await inbound(a, bob, "other chat");
    const second = await inbound(a, alice, "same chat");
    expect((await chat.next()).data?.data?.messageReceived.id).toBe(second.id);
    await chat.close();

    const foreign = await subscribe(b.key, MESSAGES, { from: a.line.handle });
    const refused = await foreign.next();
    expect(refused.data?.errors?.[0]?.extensions).toMatchObject({ code: "line_not_found", param: "from", request_id: foreign.response.headers.get("request-id") });
    const noScope = await subscribe(await makeKey(a.accountId, { scopes: ["chats:read"] }), MESSAGES);
    expect((await noScope.next()).data?.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope" });
    const toWithoutFrom = await subscribe(a.key, MESSAGES, { to: alice });
    expect((await toWithoutFrom.next()).data?.errors?.[0]?.extensions).toMatchObject({ code: "missing_required_parameter", param: "from" });
  });

  it("outboxItemUpdated follows a send from pending to sent, and to failed with its reason", async () => {
    const a = await makeAccount();
    const alice = phone();
    const unreachable = "+15005550001"; // the simulated platform refuses it permanently
    await inbound(a, alice, "hi");
    await inbound(a, unreachable, "hi");
    const stream = await subscribe(a.key, OUTBOX, { from: a.line.handle });

    const mutation = `mutation($input: SendMessageInput!) { sendMessage(input: $input) { id } }`;
    const ok = (await gql(a.key, mutation, { input: { from: a.line.handle, to: alice, text: "followed live" } })).body.data.sendMessage.id;
    expect((await stream.next()).data?.data?.outboxItemUpdated).toEqual({ status: "pending", outboxId: ok, item: { error: null, message: null } });
    startRunner();
    expect((await stream.next()).data?.data?.outboxItemUpdated).toEqual({
      status: "sent",
      outboxId: ok,
      item: { error: null, message: { text: "followed live" } },
    });

    const bad = (await gql(a.key, mutation, { input: { from: a.line.handle, to: unreachable, text: "nope" } })).body.data.sendMessage.id;
    expect((await stream.next()).data?.data?.outboxItemUpdated).toMatchObject({ status: "pending", outboxId: bad });
    expect((await stream.next()).data?.data?.outboxItemUpdated).toEqual({
      status: "failed",
      outboxId: bad,
      item: { error: "recipient is not reachable on this service", message: null },
    });
    await stream.close();
  });

  it.skipIf(!process.env.DATABASE_URL)("on PostgreSQL, events published by another instance arrive through NOTIFY", async () => {
    const a = await makeAccount();
    const incoming = await inbound(a, phone(), "hello");
    const stream = await subscribe(a.key, MESSAGES);
    await liveListenerReady();
    // A message another instance stored and announced: the row exists, the event comes only by NOTIFY.
    const prisma = await db();
    const id = newId("message");
    await prisma.message.create({
      data: { id, accountId: a.accountId, lineId: a.line.id, chatId: incoming.chat_id, guid: randomUUID(), sender: incoming.sender, text: "from elsewhere", isFromMe: false, sentAt: new Date() },
    });
    const event = { type: "message.received", accountId: a.accountId, lineId: a.line.id, chatId: incoming.chat_id, messageId: id };
    await prisma.$executeRaw`SELECT pg_notify(${`relay_live:${config().DATABASE_SCHEMA}`}, ${JSON.stringify({ from: "another-instance", events: [event] })})`;
    expect((await stream.next()).data?.data?.messageReceived).toMatchObject({ id, text: "from elsewhere" });
    // This instance's own notifications come back too, and are not delivered twice.
    const local = await inbound(a, incoming.sender, "local");
    const again = await inbound(a, incoming.sender, "local again");
    expect((await stream.next()).data?.data?.messageReceived.id).toBe(local.id);
    expect((await stream.next()).data?.data?.messageReceived.id).toBe(again.id);
    await stream.close();
  });

  it("a subscription whose key is revoked ends with an invalid_api_key error, then completes", async () => {
    const a = await makeAccount();
    const key = await makeKey(a.accountId);
    const stream = await subscribe(key, MESSAGES, { from: a.line.handle });
    expect(stream.response.status).toBe(200);
    const subscribers = liveSubscriberCount();
    const prisma = await db();
    // Revoked by another instance: noticed within API_KEY_CACHE_SECONDS, with no event needed.
    await prisma.apiKey.update({ where: { hash: hashKey(key) }, data: { revokedAt: new Date() } });
    const revokedAt = Date.now();
    const ended = await stream.next();
    expect(Date.now() - revokedAt).toBeLessThan(config().API_KEY_CACHE_SECONDS * 1000 + 2_000);
    expect(ended.event).toBe("next");
    expect(ended.data?.errors?.[0]?.extensions).toMatchObject({
      code: "invalid_api_key",
      type: "authentication_error",
      request_id: stream.response.headers.get("request-id"),
    });
    expect(ended.data?.errors?.[0]?.extensions).not.toHaveProperty("http");
    expect((await stream.next()).event).toBe("complete");
    await vi.waitFor(() => expect(liveSubscriberCount()).toBe(subscribers - 1));
    expect(openStreams(a.accountId)).toBe(0);
  });

  it("subscriptions count against the stream caps: too_many_streams beyond them, and a closed one frees its slot", async () => {
    const a = await makeAccount();
    const first = await subscribe(a.key, MESSAGES);
    const second = await subscribe(a.key, MESSAGES);
    expect(openStreams(a.accountId)).toBe(2);
    const third = await subscribe(a.key, MESSAGES);
    expect((await third.next()).data?.errors?.[0]?.extensions).toMatchObject({ code: "too_many_streams", type: "rate_limit_error" });
    // Read from both, as a connected client does (an unread in-process stream is never pulled).
    const hello = await inbound(a, phone(), "to both");
    for (const s of [first, second]) expect((await s.next()).data?.data?.messageReceived.id).toBe(hello.id);
    await first.close();
    await vi.waitFor(() => expect(openStreams(a.accountId)).toBe(1));
    const again = await subscribe(a.key, MESSAGES);
    const message = await inbound(a, phone(), "after a slot freed");
    expect((await again.next()).data?.data?.messageReceived.id).toBe(message.id);
    await second.close();
    await again.close();
    await vi.waitFor(() => expect(openStreams(a.accountId)).toBe(0));
  });
});
