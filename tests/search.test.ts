import { describe, expect, it } from "vitest";
import { createLine } from "@/server/services/lines/lines";
import { sessionActorFor } from "@/server/services/access/session";
import { createCaller } from "@/server/transports/trpc/router";
import { db, expectRequestId, get, gql, inbound, makeAccount, makeKey, phone, recordQueries, type Fixture } from "./helpers";

// Full-text search over message text (GET /v1/messages?query=, GraphQL searchMessages, tRPC
// search.messages): scoped to the caller's account, lines and chat, newest first, paged like
// the message list.

const q = encodeURIComponent;
const search = (f: Fixture, query: string, extra = "") => get(`/v1/messages?from=${q(f.line.handle)}&query=${q(query)}${extra}`, f.key);
const texts = (page: { data: { text: string }[] }) => page.data.map((m) => m.text);
const owner = (f: Fixture) => createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });

const SEARCH_GQL = `query ($query: String!, $from: String, $to: String, $limit: Int, $cursor: String) {
  searchMessages(query: $query, from: $from, to: $to, limit: $limit, cursor: $cursor) {
    messages { id text lineId chatId } hasMore nextCursor
  }
}`;

/** Every page of a REST search, following next_cursor. */
async function allPages(f: Fixture, query: string, limit: number, extra = ""): Promise<{ pages: number; ids: string[]; texts: string[] }> {
  const ids: string[] = [];
  const all: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await search(f, query, `&limit=${limit}${cursor ? `&cursor=${q(cursor)}` : ""}${extra}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.has_more).toBe(res.body.next_cursor !== null);
    ids.push(...res.body.data.map((m: { id: string }) => m.id));
    all.push(...texts(res.body));
    cursor = res.body.next_cursor;
    pages++;
  } while (cursor && pages < 1000);
  return { pages, ids, texts: all };
}

describe("message search", () => {
  it("finds whole words in the line's messages, newest first, as wire Message objects in the list envelope", async () => {
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact, "Dinner tomorrow at eight?");
    await inbound(f, contact, "lunch today instead");
    await inbound(f, contact, "Is dinner still on, or lunch?");
    const res = await search(f, "dinner");
    expect(res.status).toBe(200);
    expectRequestId(res);
    expect(res.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(texts(res.body)).toEqual(["Is dinner still on, or lunch?", "Dinner tomorrow at eight?"]);
    // The same object as the plain list's.
    const listed = (await get(`/v1/messages?from=${q(f.line.handle)}`, f.key)).body.data.find((m: { id: string }) => m.id === res.body.data[0].id);
    expect(res.body.data[0]).toEqual(listed);
    expect(res.body.data[0]).toMatchObject({ object: "message", line_id: f.line.id, chat_id: expect.stringMatching(/^cht_/), sender: contact });

    // Web-search syntax: every word must match, "a phrase" in order, -word excludes, or.
    expect(texts((await search(f, "dinner lunch")).body)).toEqual(["Is dinner still on, or lunch?"]);
    expect(texts((await search(f, '"dinner tomorrow"')).body)).toEqual(["Dinner tomorrow at eight?"]);
    expect(texts((await search(f, '"tomorrow dinner"')).body)).toEqual([]);
    expect(texts((await search(f, "dinner -lunch")).body)).toEqual(["Dinner tomorrow at eight?"]);
    expect(texts((await search(f, "today or eight")).body)).toEqual(["lunch today instead", "Dinner tomorrow at eight?"]);
    // Case does not matter, stemming does not happen ('simple'), and a word's part is not a word.
    expect(texts((await search(f, "DINNER")).body)).toHaveLength(2);
    expect(texts((await search(f, "dinners")).body)).toEqual([]);
    expect(texts((await search(f, "din")).body)).toEqual([]);
    // Only punctuation: no word to look for, so nothing matches.
    const none = await search(f, "!!! ??");
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ data: [], has_more: false, next_cursor: null });
  });

  it("never shows another account's messages, nor another line's, and scopes to one chat with `to`", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const contact = phone();
    await inbound(a, contact, "the secret word is pineapple");
    await inbound(b, contact, "pineapple on pizza, from account b");
    const second = await createLine({ accountId: a.accountId, handle: phone() });
    const a2: Fixture = { ...a, line: { id: second.id, handle: second.handle } };
    await inbound(a2, contact, "pineapple again, on the second line");
    const other = phone();
    await inbound(a, other, "a pineapple from another contact");

    const onA = (await search(a, "pineapple")).body;
    expect(texts(onA)).toEqual(["a pineapple from another contact", "the secret word is pineapple"]);
    expect(onA.data.every((m: { line_id: string }) => m.line_id === a.line.id)).toBe(true);
    expect(texts((await search(a2, "pineapple")).body)).toEqual(["pineapple again, on the second line"]);
    expect(texts((await search(b, "pineapple")).body)).toEqual(["pineapple on pizza, from account b"]);
    // Another account's line is not found, as in the plain list.
    const foreign = await get(`/v1/messages?from=${q(b.line.handle)}&query=pineapple`, a.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: "line_not_found", param: "from" });
    expectRequestId(foreign);
    // One chat: by contact or by cht_ ID.
    expect(texts((await search(a, "pineapple", `&to=${q(contact)}`)).body)).toEqual(["the secret word is pineapple"]);
    const chatId = onA.data[0].chat_id;
    expect(texts((await search(a, "pineapple", `&to=${chatId}`)).body)).toEqual(["a pineapple from another contact"]);
    // Every line of the account (GraphQL without `from`), newest first; b's message never.
    const everywhere = await gql(a.key, SEARCH_GQL, { query: "pineapple" });
    expect(everywhere.body.errors).toBeUndefined();
    expect(everywhere.body.data.searchMessages.messages.map((m: { text: string }) => m.text)).toEqual([
      "a pineapple from another contact",
      "pineapple again, on the second line",
      "the secret word is pineapple",
    ]);
    // A key restricted to the first line searches only it, even without `from`.
    const restricted = await makeKey(a.accountId, { lineIds: [a.line.id] });
    const limited = await gql(restricted, SEARCH_GQL, { query: "pineapple" });
    expect(limited.body.data.searchMessages.messages.map((m: { lineId: string }) => m.lineId)).toEqual([a.line.id, a.line.id]);
    const refused = await get(`/v1/messages?from=${q(a2.line.handle)}&query=pineapple`, restricted);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("line_not_accessible");
    // The scope of GET /v1/messages applies.
    const noRead = await makeKey(a.accountId, { scopes: ["chats:read"] });
    const scoped = await get(`/v1/messages?from=${q(a.line.handle)}&query=pineapple`, noRead);
    expect(scoped.status).toBe(403);
    expect(scoped.body.error.code).toBe("insufficient_scope");
  });

  it("pages with next_cursor exactly like the message list: no duplicates, no gaps, ties broken by ID", async () => {
    const f = await makeAccount();
    const contact = phone();
    for (let i = 0; i < 7; i++) await inbound(f, contact, `meeting number ${i}`);
    await inbound(f, contact, "something else entirely");
    const { pages, texts: found } = await allPages(f, "meeting", 3);
    expect(pages).toBe(3);
    expect(found).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `meeting number ${i}`));
    const bad = await search(f, "meeting", "&cursor=not-a-cursor");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "cursor" });
  });

  it("refuses an empty, overlong or NUL query with 400 invalid_parameter_value naming `query`", async () => {
    const f = await makeAccount();
    for (const bad of ["   ", "x".repeat(201), "nul\u0000byte"]) {
      const res = await search(f, bad);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_parameter_value", param: "query" });
      expectRequestId(res);
    }
    expect((await search(f, `  ${"x".repeat(200)}  `)).status).toBe(200);
    // GraphQL and tRPC parse the same schema.
    const gqlBad = await gql(f.key, SEARCH_GQL, { query: " " });
    expect(gqlBad.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value", request_id: expect.stringMatching(/^req_/) });
    await expect(owner(f).search.messages({ query: "x".repeat(201) })).rejects.toThrow();
  });

  it("GraphQL searchMessages pages with cursor and hasMore", async () => {
    const f = await makeAccount();
    const contact = phone();
    for (let i = 0; i < 5; i++) await inbound(f, contact, `invoice ${i} attached`);
    const first = await gql(f.key, SEARCH_GQL, { query: "invoice", from: f.line.handle, limit: 3 });
    expect(first.body.errors).toBeUndefined();
    const page = first.body.data.searchMessages;
    expect(page.messages.map((m: { text: string }) => m.text)).toEqual(["invoice 4 attached", "invoice 3 attached", "invoice 2 attached"]);
    expect(page.hasMore).toBe(true);
    const rest = (await gql(f.key, SEARCH_GQL, { query: "invoice", from: f.line.handle, limit: 3, cursor: page.nextCursor })).body.data.searchMessages;
    expect(rest.messages.map((m: { text: string }) => m.text)).toEqual(["invoice 1 attached", "invoice 0 attached"]);
    expect(rest).toMatchObject({ hasMore: false, nextCursor: null });
    const noRead = await makeKey(f.accountId, { scopes: ["chats:read"] });
    expect((await gql(noRead, SEARCH_GQL, { query: "invoice" })).body.errors[0].extensions.code).toBe("insufficient_scope");
  });

  it("tRPC search.messages gives the dashboard wire Messages with chat_id, by line and by chat", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const contact = phone();
    await inbound(f, contact, "birthday party on saturday");
    await inbound(f, phone(), "happy birthday!");
    await inbound(other, contact, "birthday of someone else");
    const all = await owner(f).search.messages({ query: "birthday" });
    expect(all.has_more).toBe(false);
    expect(all.next_cursor).toBeNull();
    expect(all.data.map((m) => m.text)).toEqual(["happy birthday!", "birthday party on saturday"]);
    expect(all.data.every((m) => m.chat_id.startsWith("cht_") && m.line_id === f.line.id)).toBe(true);
    const byLine = await owner(f).search.messages({ query: "birthday", line: f.line.handle, limit: 1 });
    expect(byLine.data.map((m) => m.text)).toEqual(["happy birthday!"]);
    expect(byLine.has_more).toBe(true);
    const next = await owner(f).search.messages({ query: "birthday", line: f.line.handle, limit: 1, cursor: byLine.next_cursor! });
    expect(next.data.map((m) => m.text)).toEqual(["birthday party on saturday"]);
    const chat = await owner(f).search.messages({ query: "birthday", chat_id: all.data[1]!.chat_id });
    expect(chat.data.map((m) => m.text)).toEqual(["birthday party on saturday"]);
    // Another account's chat is not found.
    await expect(owner(other).search.messages({ query: "birthday", chat_id: all.data[1]!.chat_id })).rejects.toThrow(/No chat/);
  });

  it("finds the same newest matches whichever way the search reads (recent window, larger window, index)", async () => {
    // 2,400 messages in one chat, more than one window: a word in every other message (found
    // in the first window), in every 40th and every 600th (a second window), and in two old
    // ones only (the GIN index), two messages at each instant so that ties are broken by ID.
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact, "first");
    const prisma = await db();
    const chat = await prisma.chat.findFirstOrThrow({ where: { lineId: f.line.id } });
    const base = Date.now() - 10_000_000;
    await prisma.$executeRawUnsafe(
      `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "sentAt")
       SELECT 'msg_search' || lpad(g::text, 6, '0'), $1, $2, $3, 'search-' || g, $4,
              concat_ws(' ', 'note', CASE WHEN g % 2 = 0 THEN 'often' END, CASE WHEN g % 40 = 0 THEN 'sometimes' END,
                        CASE WHEN g % 600 = 0 THEN 'seldom' END, CASE WHEN g IN (7, 1007) THEN 'rarest' END, 'n' || g),
              false, to_timestamp(($5::bigint + (g / 2) * 1000) / 1000.0)
       FROM generate_series(1, 2400) g`,
      f.accountId,
      f.line.id,
      chat.id,
      contact,
      base,
    );
    const reads = async (query: string, limit = 1) => (await recordQueries(() => search(f, query, `&limit=${limit}`))).statements.filter((s) => s.includes("websearch_to_tsquery"));
    const often1 = await reads("often");
    expect(often1).toHaveLength(1);
    expect(often1[0]).toContain("LIMIT 1000");
    const seldom1 = await reads("seldom", 2);
    expect(seldom1).toHaveLength(2);
    expect(seldom1.some((s) => s.includes("MATERIALIZED"))).toBe(false);
    expect((await reads("rarest")).filter((s) => s.includes("MATERIALIZED"))).toHaveLength(1);
    const often = await search(f, "often", "&limit=5");
    expect(texts(often.body)).toEqual(
      [2400, 2398, 2396, 2394, 2392].map((g) => `note often${g % 40 === 0 ? " sometimes" : ""}${g % 600 === 0 ? " seldom" : ""} n${g}`),
    );
    const sometimes = await allPages(f, "sometimes", 50);
    expect(sometimes.texts).toHaveLength(60);
    expect(sometimes.texts.map((t) => Number(t.split(" n")[1]))).toEqual(
      Array.from({ length: 60 }, (_, i) => 2400 - i * 40),
    );
    const seldom = await allPages(f, "seldom", 2);
    expect(seldom.texts).toEqual([2400, 2400 - 600, 2400 - 1200, 2400 - 1800].map((g) => `note often sometimes seldom n${g}`));
    expect(seldom.pages).toBe(2);
    // Chat-scoped and two-word searches agree with the line's.
    expect((await allPages(f, "sometimes seldom", 3, `&to=${chat.id}`)).texts).toEqual(seldom.texts);
    // Not in the newest 1,000 at all: the index finds both, then the next page the window.
    const rarest = await allPages(f, "rarest", 1);
    expect(rarest.texts).toEqual(["note rarest n1007", "note rarest n7"]);
    // Ties: two messages per second, the higher ID first.
    const tied = (await search(f, "note", "&limit=4")).body.data.map((m: { id: string; sent_at: number }) => [m.id, m.sent_at]);
    expect(tied.map(([id]: [string]) => id)).toEqual(["msg_search002400", "msg_search002399", "msg_search002398", "msg_search002397"]);
    expect(tied[1][1]).toBe(tied[2][1]);
  });
  it("merges the lines of an account newest first, a busy line and a quiet one, without falling back to the index", async () => {
    // 2,600 messages alternating between two lines (about 3 in 13 on the quiet one), "blue" in
    // every 20th: GraphQL without `from` pages through all 130, in order, and the first page
    // comes from the recent windows (the busy line's window sets how far back they are sure).
    const f = await makeAccount();
    const quiet = await createLine({ accountId: f.accountId, handle: phone() });
    const contact = phone();
    await inbound(f, contact, "hello");
    await inbound({ ...f, line: { id: quiet.id, handle: quiet.handle } }, contact, "hello");
    const prisma = await db();
    const chats = await prisma.chat.findMany({ where: { accountId: f.accountId } });
    const chatOf = (lineId: string) => chats.find((c) => c.lineId === lineId)!.id;
    await prisma.$executeRawUnsafe(
      `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "sentAt")
       SELECT 'msg_merge' || lpad(g::text, 6, '0'), $1,
              CASE WHEN g % 13 < 3 THEN $3 ELSE $2 END, CASE WHEN g % 13 < 3 THEN $5 ELSE $4 END,
              'merge-' || g, $6, CASE WHEN g % 20 = 0 THEN 'word blue n' ELSE 'word n' END || g, false,
              to_timestamp(($7::bigint + g * 1000) / 1000.0)
       FROM generate_series(1, 2600) g`,
      f.accountId,
      f.line.id,
      quiet.id,
      chatOf(f.line.id),
      chatOf(quiet.id),
      contact,
      Date.now() - 10_000_000,
    );
    const expected = Array.from({ length: 2600 }, (_, i) => 2600 - i).filter((g) => g % 20 === 0);
    const first = await recordQueries(() => gql(f.key, SEARCH_GQL, { query: "blue", limit: 50 }));
    expect(first.statements.some((s) => s.includes("MATERIALIZED"))).toBe(false);
    const seen: number[] = [];
    let page = first.result.body.data.searchMessages;
    for (let i = 0; i < 20; i++) {
      seen.push(...page.messages.map((m: { text: string }) => Number(m.text.split(" n")[1])));
      if (!page.hasMore) break;
      page = (await gql(f.key, SEARCH_GQL, { query: "blue", limit: 100, cursor: page.nextCursor })).body.data.searchMessages;
    }
    expect(seen).toEqual(expected);
    // One line of the two: only its own, in the same order.
    const onQuiet = await owner(f).search.messages({ query: "blue", line: quiet.handle, limit: 100 });
    expect(onQuiet.data.map((m) => Number(m.text!.split(" n")[1]))).toEqual(expected.filter((g) => g % 13 < 3));
  });
});
