import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { createLine } from "@/server/services/lines/lines";
import { call, db, get, gql, inbound, makeAccount, makeKey, phone, type ApiResult, type Fixture } from "./helpers";
import { wav } from "./wav";

// Scheduled sends, held items, cancel and reschedule, capacity, sender pools and line send
// policies through GraphQL: the same services, rules and error codes as /v1 (and the CLI),
// with held items shown as pending, as REST shows them.

// Pools and send policies are the owner's (the dashboard session, never an API key). GraphQL
// reads the session through next-auth, which needs Next's request scope: it is supplied here
// instead (as in graphql-security.test.ts).
const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));
const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";
beforeEach(() => {
  session.actor = null;
});

/** An operation as the signed-in owner of `f`. */
function asOwner(f: Fixture, query: string, variables?: Record<string, unknown>) {
  session.actor = sessionActorFor(f.accountId);
  return gql(null, query, variables, { cookie: COOKIE });
}

function dataOf(res: ApiResult, field: string) {
  expect(res.status).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data[field];
}

function errorOf(res: ApiResult) {
  expect(res.status).toBe(200);
  const error = res.body.errors?.[0];
  expect(error, JSON.stringify(res.body)).toBeDefined();
  expect(error.extensions.request_id).toBe(res.headers.get("request-id"));
  return error.extensions as { code: string; type: string; param?: string };
}

const ITEM = "id lineId status holdReason notBefore canceledAt poolId fallback error completedAt";
const SEND = `mutation($input: SendMessageInput!) { sendMessage(input: $input) { ${ITEM} } }`;
const CANCEL = `mutation($id: String!) { cancelOutboxItem(id: $id) { ${ITEM} } }`;
const RESCHEDULE = `mutation($id: String!, $sendAt: Timestamp!) { rescheduleOutboxItem(id: $id, sendAt: $sendAt) { ${ITEM} } }`;
const HOUR = 3_600_000;

/** A fixture with a contact that wrote to its line (so the line may send to it). */
async function withContact(options: Parameters<typeof makeAccount>[0] = {}) {
  const f = await makeAccount(options);
  const alice = phone();
  await inbound(f, alice, "hi");
  return { f, alice };
}

describe("GraphQL: scheduled sends, cancel and reschedule", () => {
  it("sendMessage with sendAt stores a pending item held as scheduled until then; queries and REST agree", async () => {
    const { f, alice } = await withContact();
    const sendAt = Date.now() + HOUR;
    const item = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt } }), "sendMessage");
    expect(item).toEqual({
      id: expect.stringMatching(/^obx_/),
      lineId: f.line.id,
      status: "pending",
      holdReason: "scheduled",
      notBefore: sendAt,
      canceledAt: null,
      poolId: null,
      fallback: false,
      error: null,
      completedAt: null,
    });
    // Stored as held: never shown.
    expect((await (await db()).outboxItem.findUniqueOrThrow({ where: { id: item.id } })).status).toBe("held");
    expect(dataOf(await gql(f.key, `query($id: String!) { outboxItem(id: $id) { ${ITEM} } }`, { id: item.id }), "outboxItem")).toEqual(item);
    const rest = await get(`/v1/outbox?id=${item.id}`, f.key);
    expect(rest.body).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: sendAt, canceled_at: null, pool_id: null, fallback: false });

    // A status filter of pending includes held items; no other status does.
    const now = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "now" } }), "sendMessage");
    expect(now).toMatchObject({ status: "pending", holdReason: null, notBefore: null });
    const LIST = `query($status: OutboxStatus) { outbox(from: "${f.line.id}", status: $status) { edges { node { id status } } } }`;
    const pending = dataOf(await gql(f.key, LIST, { status: "pending" }), "outbox").edges.map((e: { node: { id: string } }) => e.node.id);
    expect(pending).toEqual([now.id, item.id]);
    for (const status of ["claimed", "sent", "failed"]) {
      expect(dataOf(await gql(f.key, LIST, { status }), "outbox").edges).toEqual([]);
    }
    const all = dataOf(await gql(f.key, LIST, {}), "outbox").edges.map((e: { node: { status: string } }) => e.node.status);
    expect(all).toEqual(["pending", "pending"]);
  });

  it("refuses a sendAt in seconds, in the past or over a year ahead, naming sendAt", async () => {
    const { f, alice } = await withContact();
    const send = (sendAt: unknown) => gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "x", sendAt } });
    for (const sendAt of [Math.floor(Date.now() / 1000) + 3600, Date.now() - 60_000, Date.now() + 366 * 24 * HOUR]) {
      expect(errorOf(await send(sendAt)), String(sendAt)).toMatchObject({ code: "invalid_parameter_value", param: "sendAt" });
    }
    // Not a Timestamp at all: GraphQL's own variable check refuses it before anything runs.
    const negative = await send(-1);
    expect(negative.status).toBe(400);
    expect(negative.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(await (await db()).outboxItem.count({ where: { accountId: f.accountId } })).toBe(0);
  });

  it("sendAudioMessage takes sendAt too", async () => {
    const { f, alice } = await withContact();
    const upload = await gql(f.key, `mutation($b: String!) { uploadFile(input: { contentBase64: $b, filename: "memo.wav" }) { id } }`, {
      b: wav().toString("base64"),
    });
    const sendAt = Date.now() + 2 * HOUR;
    const audio = await gql(f.key, `mutation($input: SendAudioMessageInput!) { sendAudioMessage(input: $input) { ${ITEM} } }`, {
      input: { from: f.line.handle, to: alice, audioMessage: dataOf(upload, "uploadFile").id, sendAt },
    });
    expect(dataOf(audio, "sendAudioMessage")).toMatchObject({ status: "pending", holdReason: "scheduled", notBefore: sendAt });
  });

  it("cancelOutboxItem ends a pending item failed (canceled); a second cancel and a reschedule are refused with 409 codes", async () => {
    const { f, alice } = await withContact();
    const item = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + HOUR } }), "sendMessage");
    const canceled = dataOf(await gql(f.key, CANCEL, { id: item.id }), "cancelOutboxItem");
    expect(canceled).toMatchObject({ id: item.id, status: "failed", error: "canceled", holdReason: null, notBefore: null });
    expect(canceled.canceledAt).toEqual(expect.any(Number));
    expect(canceled.completedAt).toBe(canceled.canceledAt);

    const again = errorOf(await gql(f.key, CANCEL, { id: item.id }));
    expect(again).toMatchObject({ code: "outbox_item_not_cancelable", type: "invalid_request_error", param: "id" });
    const moved = errorOf(await gql(f.key, RESCHEDULE, { id: item.id, sendAt: Date.now() + HOUR }));
    expect(moved).toMatchObject({ code: "outbox_item_not_reschedulable", type: "invalid_request_error", param: "id" });
    // REST answers the same codes, with 409.
    expect((await get(`/v1/outbox?id=${item.id}`, f.key)).body).toMatchObject({ status: "failed", error: "canceled" });
    const rest = await call("DELETE", `/v1/outbox?id=${item.id}`, { key: f.key });
    expect(rest.status).toBe(409);
    expect(rest.body.error).toMatchObject({ code: "outbox_item_not_cancelable" });

    // An item due now is pending too, and can be canceled before it is claimed (no runner here).
    const now = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "now" } }), "sendMessage");
    expect(dataOf(await gql(f.key, CANCEL, { id: now.id }), "cancelOutboxItem")).toMatchObject({ status: "failed", error: "canceled" });

    expect(errorOf(await gql(f.key, CANCEL, { id: "obx_nope" }))).toMatchObject({ code: "outbox_item_not_found", param: "id" });
    expect(errorOf(await gql(f.key, CANCEL, { id: "msg_123" }))).toMatchObject({ code: "invalid_parameter_value", param: "id" });
    expect(errorOf(await gql(f.key, CANCEL, { id: " " }))).toMatchObject({ code: "invalid_parameter_value", param: "id" });
  });

  it("rescheduleOutboxItem moves a pending item (held or due) to a new time; its time is checked", async () => {
    const { f, alice } = await withContact();
    const item = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + HOUR } }), "sendMessage");
    const at = Date.now() + 5 * HOUR;
    expect(dataOf(await gql(f.key, RESCHEDULE, { id: item.id, sendAt: at }), "rescheduleOutboxItem")).toMatchObject({
      id: item.id,
      status: "pending",
      holdReason: "scheduled",
      notBefore: at,
    });
    const due = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "now" } }), "sendMessage");
    expect(dataOf(await gql(f.key, RESCHEDULE, { id: due.id, sendAt: at }), "rescheduleOutboxItem")).toMatchObject({ holdReason: "scheduled", notBefore: at });

    expect(errorOf(await gql(f.key, RESCHEDULE, { id: item.id, sendAt: Date.now() - 1_000 }))).toMatchObject({ code: "invalid_parameter_value", param: "sendAt" });
    expect(errorOf(await gql(f.key, RESCHEDULE, { id: item.id, sendAt: 1_700_000_000 }))).toMatchObject({ code: "invalid_parameter_value", param: "sendAt" });
    expect(dataOf(await gql(f.key, `query($id: String!) { outboxItem(id: $id) { notBefore } }`, { id: item.id }), "outboxItem")).toEqual({ notBefore: at });
  });

  it("cancel and reschedule need messages:write (like DELETE and PATCH /v1/outbox)", async () => {
    const { f, alice } = await withContact();
    const item = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + HOUR } }), "sendMessage");
    const reader = await makeKey(f.accountId, { scopes: ["outbox:read"] });
    expect(errorOf(await gql(reader, CANCEL, { id: item.id }))).toMatchObject({ code: "insufficient_scope" });
    expect(errorOf(await gql(reader, RESCHEDULE, { id: item.id, sendAt: Date.now() + HOUR }))).toMatchObject({ code: "insufficient_scope" });
    expect((await (await db()).outboxItem.findUniqueOrThrow({ where: { id: item.id } })).status).toBe("held");
  });
});

const CAPACITY = `query($from: String!) { capacity(from: $from) {
  from poolId
  lines { lineId handle status nextSlotAt
    newContacts { hour { used limit remaining resetsAt } day { used limit remaining resetsAt } }
    quietHours { active until }
    queued { scheduled quietHours newContactBudget lineRate lineUnavailable } } } }`;

describe("GraphQL: capacity", () => {
  it("an iMessage line has budgets of 10 per hour and 50 per day; an SMS line has none; scheduled sends are counted", async () => {
    const { f, alice } = await withContact();
    await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + HOUR } });
    const capacity = dataOf(await gql(f.key, CAPACITY, { from: f.line.handle }), "capacity");
    expect(capacity).toEqual({
      from: f.line.handle,
      poolId: null,
      lines: [
        {
          lineId: f.line.id,
          handle: f.line.handle,
          status: "connected",
          nextSlotAt: expect.any(Number),
          newContacts: { hour: { used: 0, limit: 10, remaining: 10, resetsAt: null }, day: { used: 0, limit: 50, remaining: 50, resetsAt: null } },
          quietHours: { active: false, until: null },
          queued: { scheduled: 1, quietHours: 0, newContactBudget: 0, lineRate: 0, lineUnavailable: 0 },
        },
      ],
    });

    const sms = await makeAccount({ service: "sms" });
    const line = dataOf(await gql(sms.key, CAPACITY, { from: sms.line.id }), "capacity").lines[0];
    expect(line.newContacts).toEqual({ hour: { used: 0, limit: null, remaining: null, resetsAt: null }, day: { used: 0, limit: null, remaining: null, resetsAt: null } });
  });

  it("needs lines:read; an unknown line or pool is not found, naming from", async () => {
    const f = await makeAccount();
    const writer = await makeKey(f.accountId, { scopes: ["messages:write"] });
    expect(errorOf(await gql(writer, CAPACITY, { from: f.line.id }))).toMatchObject({ code: "insufficient_scope" });
    expect(errorOf(await gql(f.key, CAPACITY, { from: "+15550000000" }))).toMatchObject({ code: "line_not_found" });
    expect(errorOf(await gql(f.key, CAPACITY, { from: "pool_nope" }))).toMatchObject({ code: "pool_not_found", param: "from" });
    expect(errorOf(await gql(f.key, CAPACITY, { from: " " }))).toMatchObject({ code: "invalid_parameter_value", param: "from" });
  });
});

const POOL = "id name lineIds lines { id handle } createdAt";

describe("GraphQL: sender pools (owner only)", () => {
  it("the owner creates a pool, adds and removes lines, and deletes it; keys list pools and send from them", async () => {
    const { f, alice } = await withContact();
    const second = await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true });

    const created = dataOf(await asOwner(f, `mutation($lineIds: [String!]!) { createPool(name: " Support ", lineIds: $lineIds) { ${POOL} } }`, { lineIds: [f.line.id] }), "createPool");
    expect(created).toEqual({ id: expect.stringMatching(/^pool_/), name: "Support", lineIds: [f.line.id], lines: [{ id: f.line.id, handle: f.line.handle }], createdAt: expect.any(Number) });
    const ADD = `mutation($poolId: String!, $lineId: String!) { addPoolLine(poolId: $poolId, lineId: $lineId) { ${POOL} } }`;
    const added = dataOf(await asOwner(f, ADD, { poolId: created.id, lineId: second.id }), "addPoolLine");
    expect(added.lineIds).toEqual([f.line.id, second.id]);
    expect(added.lines.map((l: { id: string }) => l.id)).toEqual([f.line.id, second.id]);
    expect(dataOf(await asOwner(f, ADD, { poolId: created.id, lineId: second.id }), "addPoolLine").lineIds).toEqual([f.line.id, second.id]);

    // An API key with lines:read lists it.
    session.actor = null;
    expect(dataOf(await gql(f.key, `{ pools { ${POOL} } }`), "pools")).toEqual([added]);

    // A send from the pool goes from the line that already talks with the contact.
    const sent = dataOf(await gql(f.key, SEND, { input: { from: created.id, to: alice, text: "from the pool" } }), "sendMessage");
    expect(sent).toMatchObject({ lineId: f.line.id, poolId: created.id, status: "pending" });
    const capacity = dataOf(await gql(f.key, CAPACITY, { from: created.id }), "capacity");
    expect(capacity).toMatchObject({ from: created.id, poolId: created.id });
    expect(capacity.lines.map((l: { lineId: string }) => l.lineId)).toEqual([f.line.id, second.id]);

    const removed = dataOf(
      await asOwner(f, `mutation($poolId: String!, $lineId: String!) { removePoolLine(poolId: $poolId, lineId: $lineId) { lineIds } }`, { poolId: created.id, lineId: f.line.id }),
      "removePoolLine",
    );
    expect(removed.lineIds).toEqual([second.id]);
    expect(dataOf(await asOwner(f, `mutation($id: String!) { deletePool(id: $id) { id deleted } }`, { id: created.id }), "deletePool")).toEqual({ id: created.id, deleted: true });
    expect(dataOf(await asOwner(f, `{ pools { id } }`), "pools")).toEqual([]);
    expect(errorOf(await asOwner(f, `mutation($id: String!) { deletePool(id: $id) { id } }`, { id: created.id }))).toMatchObject({ code: "pool_not_found", param: "id" });
  });

  it("checks names and lines like the service; API keys are refused whatever their scopes", async () => {
    const f = await makeAccount();
    const CREATE = `mutation($name: String!, $lineIds: [String!]!) { createPool(name: $name, lineIds: $lineIds) { id } }`;
    dataOf(await asOwner(f, CREATE, { name: "Sales", lineIds: [f.line.id] }), "createPool");
    expect(errorOf(await asOwner(f, CREATE, { name: "Sales", lineIds: [f.line.id] }))).toMatchObject({ code: "invalid_parameter_value", param: "name" });
    expect(errorOf(await asOwner(f, CREATE, { name: "  ", lineIds: [f.line.id] }))).toMatchObject({ code: "invalid_parameter_value", param: "name" });
    expect(errorOf(await asOwner(f, CREATE, { name: "x".repeat(101), lineIds: [f.line.id] }))).toMatchObject({ code: "invalid_parameter_value", param: "name" });
    expect(errorOf(await asOwner(f, CREATE, { name: "Empty", lineIds: [] }))).toMatchObject({ code: "invalid_parameter_value", param: "lineIds" });
    expect(errorOf(await asOwner(f, CREATE, { name: "Unknown", lineIds: ["ln_nope"] }))).toMatchObject({ code: "invalid_parameter_value", param: "lineIds" });

    session.actor = null;
    const refused = errorOf(await gql(f.key, CREATE, { name: "By key", lineIds: [f.line.id] }));
    expect(refused).toMatchObject({ code: "session_required", type: "authentication_error" });
    expect(await (await db()).pool.count({ where: { accountId: f.accountId } })).toBe(1);
    const reader = await makeKey(f.accountId, { scopes: ["messages:read"] });
    expect(errorOf(await gql(reader, `{ pools { id } }`))).toMatchObject({ code: "insufficient_scope" });
  });
});

const POLICY = `mutation($lineId: String!, $policy: SendPolicyInput!) { setLineSendPolicy(lineId: $lineId, policy: $policy) {
  id sendPolicy { contactFirst newContactsPerHour newContactsPerDay quietHours { start end timezone } ratePerSecond } } }`;

describe("GraphQL: line send policy", () => {
  it("Line.sendPolicy shows the service's defaults", async () => {
    const f = await makeAccount();
    const sms = await makeAccount({ service: "sms" });
    const LINES = `{ lines { edges { node { id sendPolicy { contactFirst newContactsPerHour newContactsPerDay quietHours { start } ratePerSecond } } } } }`;
    const mine = (res: ApiResult, id: string) => dataOf(res, "lines").edges.find((e: { node: { id: string } }) => e.node.id === id).node.sendPolicy;
    expect(mine(await gql(f.key, LINES), f.line.id)).toEqual({ contactFirst: true, newContactsPerHour: 10, newContactsPerDay: 50, quietHours: null, ratePerSecond: 1 });
    expect(mine(await gql(sms.key, LINES), sms.line.id)).toEqual({ contactFirst: true, newContactsPerHour: null, newContactsPerDay: null, quietHours: null, ratePerSecond: 1 });
  });

  it("the owner sets a policy: fields given replace, null clears, the rest keep; bad values name the field", async () => {
    const f = await makeAccount();
    const quietHours = { start: "21:00", end: "08:00", timezone: "America/New_York" };
    const set = dataOf(await asOwner(f, POLICY, { lineId: f.line.id, policy: { contactFirst: false, newContactsPerHour: 5, quietHours, ratePerSecond: 2.5 } }), "setLineSendPolicy");
    expect(set).toEqual({ id: f.line.id, sendPolicy: { contactFirst: false, newContactsPerHour: 5, newContactsPerDay: 50, quietHours, ratePerSecond: 2.5 } });
    // Read back with an API key.
    session.actor = null;
    const read = dataOf(await gql(f.key, `{ lines { edges { node { id sendPolicy { newContactsPerHour quietHours { timezone } } } } } }`), "lines");
    expect(read.edges.find((e: { node: { id: string } }) => e.node.id === f.line.id).node.sendPolicy).toEqual({ newContactsPerHour: 5, quietHours: { timezone: "America/New_York" } });
    expect((await get("/v1/lines", f.key)).body.data.find((l: { id: string }) => l.id === f.line.id).send_policy).toMatchObject({ new_contacts_per_hour: 5, quiet_hours: quietHours });

    const cleared = dataOf(await asOwner(f, POLICY, { lineId: f.line.id, policy: { newContactsPerHour: null, quietHours: null } }), "setLineSendPolicy");
    expect(cleared.sendPolicy).toEqual({ contactFirst: false, newContactsPerHour: null, newContactsPerDay: 50, quietHours: null, ratePerSecond: 2.5 });

    const bad = async (policy: Record<string, unknown>) => errorOf(await asOwner(f, POLICY, { lineId: f.line.id, policy }));
    expect(await bad({ quietHours: { ...quietHours, timezone: "Mars/Olympus_Mons" } })).toMatchObject({ code: "invalid_parameter_value", param: "quietHours.timezone" });
    expect(await bad({ quietHours: { ...quietHours, start: "25:00" } })).toMatchObject({ code: "invalid_parameter_value", param: "quietHours.start" });
    expect(await bad({ quietHours: { ...quietHours, end: "21:00" } })).toMatchObject({ code: "invalid_parameter_value", param: "quietHours.end" });
    expect(await bad({ newContactsPerDay: -1 })).toMatchObject({ code: "invalid_parameter_value", param: "newContactsPerDay" });
    expect(await bad({ ratePerSecond: 0 })).toMatchObject({ code: "invalid_parameter_value", param: "ratePerSecond" });
    expect(await bad({ contactFirst: null })).toMatchObject({ code: "invalid_parameter_value", param: "contactFirst" });
    // Nothing of the refused changes was stored.
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).sendPolicy).toEqual({ contact_first: false, new_contacts_per_hour: null, quiet_hours: null });
  });

  it("quiet hours that cover now show in capacity", async () => {
    const f = await makeAccount();
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const end = Date.now() + HOUR;
    dataOf(await asOwner(f, POLICY, { lineId: f.line.id, policy: { quietHours: { start: hhmm(Date.now() - HOUR), end: hhmm(end), timezone: "UTC" } } }), "setLineSendPolicy");
    session.actor = null;
    const quiet = dataOf(await gql(f.key, CAPACITY, { from: f.line.id }), "capacity").lines[0].quietHours;
    expect(quiet.active).toBe(true);
    expect(Math.abs(quiet.until - end)).toBeLessThan(60_000);
  });

  it("is the owner's: API keys get session_required; unknown and sandbox lines are not found", async () => {
    const f = await makeAccount();
    expect(errorOf(await gql(f.key, POLICY, { lineId: f.line.id, policy: { contactFirst: false } }))).toMatchObject({ code: "session_required" });
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).sendPolicy).toEqual({});
    expect(errorOf(await asOwner(f, POLICY, { lineId: "ln_nope", policy: {} }))).toMatchObject({ code: "line_not_found", param: "lineId" });
    const lines = dataOf(await asOwner(f, `{ lines { edges { node { id isSandbox } } } }`), "lines").edges.map((e: { node: { id: string; isSandbox: boolean } }) => e.node);
    const sandbox = lines.find((l: { isSandbox: boolean }) => l.isSandbox);
    if (sandbox) expect(errorOf(await asOwner(f, POLICY, { lineId: sandbox.id, policy: { contactFirst: false } }))).toMatchObject({ code: "line_not_found" });
  });
});
