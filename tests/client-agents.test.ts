import { describe, expect, it } from "vitest";
import { AuthorizationError, InvalidRequestError, NotFoundError, RateLimitError, Relay, RelayError } from "@/packages/client/src/index";
import type { GuardrailsInput } from "@/server/policy/key-guardrails";
import { dispatch, inbound, makeAccount, makeKey, phone, runDelivery, type Fixture } from "./helpers";

// The client library and a key handed to an agent (docs/agents.md), against the real route
// handlers in-process: each guardrail's refusal arrives as its typed error and code, and the
// owner approves or rejects held sends and pauses and resumes chats through the client.

runDelivery();

const routeFetch: typeof fetch = async (input, init) => dispatch(new Request(input, init));
const relayWith = (key: string) => new Relay({ apiKey: key, baseUrl: "http://localhost:3000", fetch: routeFetch, retryDelayMs: 1 });
const agentOf = async (f: Fixture, guardrails: GuardrailsInput) => relayWith(await makeKey(f.accountId, { guardrails }));

/** The error a call rejects with (fails the test when it resolves). */
async function refusal(call: Promise<unknown>): Promise<RelayError> {
  const outcome = await call.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a refusal, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(RelayError);
  return outcome.error as RelayError;
}

describe("a guarded key through the client", () => {
  it("gets recipient_not_allowed and reply_required as AuthorizationError (403)", async () => {
    const f = await makeAccount();
    const [alice, bob] = [phone(), phone()];
    await inbound(f, alice);
    await inbound(f, bob);
    const agent = await agentOf(f, { allow_to: [alice], max_sends_per_chat_without_reply: 1 });

    const notListed = await refusal(agent.messages.send({ from: f.line.handle, to: bob, text: "hi bob" }));
    expect(notListed).toBeInstanceOf(AuthorizationError);
    expect(notListed).toMatchObject({ code: "recipient_not_allowed", status: 403, param: "to", requestId: expect.stringMatching(/^req_/) });

    expect(await agent.messages.send({ from: f.line.handle, to: alice, text: "one" })).toMatchObject({ status: "pending" });
    const again = await refusal(agent.messages.send({ from: f.line.handle, to: alice, text: "two" }));
    expect(again).toBeInstanceOf(AuthorizationError);
    expect(again).toMatchObject({ code: "reply_required", status: 403 });
    await inbound(f, alice, "answer");
    expect(await agent.messages.send({ from: f.line.handle, to: alice, text: "two" })).toMatchObject({ status: "pending" });
  });

  it("gets key_send_limit_exceeded as RateLimitError (429) with its Retry-After, at once rather than after retries", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await agentOf(f, { max_sends_per_day: 1 });
    await agent.messages.send({ from: f.line.handle, to: alice, text: "the one" });
    const started = Date.now();
    const limited = await refusal(agent.messages.send({ from: f.line.handle, to: alice, text: "one more" }));
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited).toMatchObject({ code: "key_send_limit_exceeded", status: 429 });
    // The window is a day: far past what the client waits for (maxRetryAfterMs), so it is not retried.
    expect(limited.retryAfterMs).toBeGreaterThan(23 * 3_600_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("gets chat_paused as InvalidRequestError (409) while the owner has paused the chat, and sends again once resumed", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const owner = relayWith(f.key);
    const agent = await agentOf(f, { allow_to: [alice] });
    const chat = (await owner.chats.list({ from: f.line.handle })).data.find((c) => c.identifier === alice)!;

    const paused = await owner.chats.pause(chat.id);
    expect(paused).toMatchObject({ object: "chat", id: chat.id, paused_at: expect.any(Number), paused_by: expect.any(String) });
    // Pausing again keeps when it started.
    expect((await owner.chats.pause(chat.id)).paused_at).toBe(paused.paused_at);
    const refused = await refusal(agent.messages.send({ from: f.line.handle, to: alice, text: "still there?" }));
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused).toMatchObject({ code: "chat_paused", status: 409 });
    // The owner's own sends still go.
    expect(await owner.messages.send({ from: f.line.handle, to: alice, text: "a person here" })).toMatchObject({ status: "pending" });

    expect(await owner.chats.resume(chat.id)).toMatchObject({ id: chat.id, paused_at: null, paused_by: null });
    expect(await agent.messages.send({ from: f.line.handle, to: alice, text: "back" })).toMatchObject({ status: "pending" });

    // The agent may not lift the pause itself: a guarded key never holds outbox:approve.
    const denied = await refusal(agent.chats.pause(chat.id));
    expect(denied).toBeInstanceOf(AuthorizationError);
    expect(denied.code).toBe("insufficient_scope");
  });
});

describe("a guarded key's outbox through the client", () => {
  it("lists, gets, cancels and reschedules its own sends only; another's is NotFoundError outbox_item_not_found", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const owner = relayWith(f.key);
    const agent = await agentOf(f, { allow_to: [alice] });
    const sendAt = Date.now() + 3_600_000;
    const owners = await owner.messages.send({ from: f.line.handle, to: alice, text: "the owner's", send_at: sendAt });
    const own = await agent.messages.send({ from: f.line.handle, to: alice, text: "the agent's", send_at: sendAt });
    expect((await agent.outbox.list({ from: f.line.handle })).data.map((i) => i.id)).toEqual([own.id]);
    expect((await owner.outbox.list({ from: f.line.handle })).data.map((i) => i.id)).toEqual([own.id, owners.id]);
    for (const reach of [() => agent.outbox.get(owners.id), () => agent.outbox.cancel(owners.id), () => agent.outbox.reschedule(owners.id, Date.now() + 60_000)]) {
      const error = await refusal(reach());
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toMatchObject({ code: "outbox_item_not_found", status: 404, param: "id" });
    }
    expect(await owner.outbox.get(owners.id)).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: sendAt });
    expect(await agent.outbox.cancel(own.id)).toMatchObject({ id: own.id, status: "failed", error: "canceled" });
  });
});

describe("approval through the client", () => {
  it("lists held sends, approves one (it is sent) and rejects another (it never goes)", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const owner = relayWith(f.key);
    const agent = await agentOf(f, { require_approval: true });

    const first = await agent.messages.send({ from: f.line.handle, to: alice, text: "may I?" });
    const second = await agent.messages.send({ from: f.line.handle, to: alice, text: "and this?" });
    expect(await owner.outbox.get(first.id)).toMatchObject({ status: "pending", hold_reason: "approval" });
    const held = await owner.outbox.list({ hold_reason: "approval" });
    expect(held.data.map((i) => i.id).sort()).toEqual([first.id, second.id].sort());

    const approved = await owner.outbox.approve(first.id);
    expect(approved).toMatchObject({ id: first.id, status: "pending" });
    expect(approved.hold_reason).not.toBe("approval");
    expect(await owner.outbox.wait(first.id, { timeoutMs: 15_000, intervalMs: 20 })).toMatchObject({ status: "sent" });

    expect(await owner.outbox.reject(second.id)).toMatchObject({ id: second.id, status: "failed", error: "rejected" });
    expect((await owner.outbox.list({ hold_reason: "approval" })).data).toEqual([]);

    // Decided already: neither can be reviewed again.
    // Each call starts only when awaited: a second promise rejecting while the
    // first is awaited would be an unhandled rejection.
    for (const decide of [() => owner.outbox.approve(second.id), () => owner.outbox.reject(first.id)]) {
      const error = await refusal(decide());
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ code: "outbox_item_not_reviewable", status: 409, param: "id" });
    }
    // The agent cannot approve its own sends.
    const third = await agent.messages.send({ from: f.line.handle, to: alice, text: "let me through" });
    const selfApproval = await refusal(agent.outbox.approve(third.id));
    expect(selfApproval).toBeInstanceOf(AuthorizationError);
    expect(selfApproval.code).toBe("insufficient_scope");
  });
});
