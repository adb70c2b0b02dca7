import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTwilioClient, type TwilioClient } from "@/server/platform/twilio/client";
import { catchUpQuery, reconcileQueries, twilioPlatform } from "@/server/platform/twilio/platform";
import type { OutgoingMessage } from "@/server/platform/types";
import { type PrismMock, SPECS, startPrism } from "./prism";

// Contract: every request the Twilio adapter makes is valid against Twilio's own OpenAPI
// document (specs/twilio-messages.openapi.json, served by Prism, which answers 422 for a request
// the document does not allow) and its answers parse. Prism does not enforce the document's
// x-twilio.conditional (From or MessagingServiceSid, Body or MediaUrl): the request builder's
// unit test does (server/platform/twilio/client.test.ts).

const SPEC = "twilio-messages.openapi.json";
const CREATE = "/2010-04-01/Accounts/{AccountSid}/Messages.json";
const ACCOUNT_SID = `AC${"0123456789abcdef".repeat(2)}`;
const SERVICE_SID = `MG${"fedcba9876543210".repeat(2)}`;
const MESSAGE_SID = `SM${"a1b2c3d4e5f60718".repeat(2)}`;

type Doc = { paths: Record<string, { post: { requestBody: { content: Record<string, { encoding?: unknown }> } } }> };

/**
 * The document as served: the shared one with MediaUrl's form encoding written out. OpenAPI 3.0
 * defaults a form body's properties to style form, explode true (a key given once or more is an
 * array), but Prism applies that only when stated, and would read one MediaUrl as a string.
 */
function servedDocument(): { doc: Doc; original: Doc } {
  const original = JSON.parse(readFileSync(path.join(SPECS, SPEC), "utf8")) as Doc;
  const doc = structuredClone(original);
  doc.paths[CREATE]!.post.requestBody.content["application/x-www-form-urlencoded"]!.encoding = { MediaUrl: { style: "form", explode: true } };
  return { doc, original };
}

let mock: PrismMock;
let dir: string;
let client: TwilioClient;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "relay-twilio-spec-"));
  const file = path.join(dir, SPEC);
  writeFileSync(file, JSON.stringify(servedDocument().doc));
  mock = await startPrism(path.relative(SPECS, file));
  client = createTwilioClient({ accountSid: ACCOUNT_SID, authToken: "contract-test-token", baseUrl: mock.url }, { timeoutMs: 15_000 });
}, 90_000);

afterAll(async () => {
  await mock?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Violations of our requests. Prism also validates its own answers, and the document's examples break their own `uri` formats (relative URIs): those lines are not about us. */
const requestViolations = () => mock.violations().filter((line) => !/Violation: response\./.test(line));

function message(overrides: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    idempotencyKey: "obx_contract",
    lineHandle: "+15017122661",
    to: "+15558675310",
    isGroup: false,
    providerChatId: null,
    text: "Hello from the contract test 👍",
    attachments: [],
    replyToGuid: null,
    isAudioMessage: false,
    ...overrides,
  };
}

const line = { handle: "+15017122661", messagingServiceSid: null, statusCallback: "https://relay.example.com/api/inbound/ln_01contract?token=abc-DEF_123", sendTimeoutMs: 15_000 };

describe("Twilio's Messages API as its OpenAPI document describes it", () => {
  it("serves the shared document with only MediaUrl's default form encoding written out", () => {
    const { doc, original } = servedDocument();
    delete doc.paths[CREATE]!.post.requestBody.content["application/x-www-form-urlencoded"]!.encoding;
    expect(doc).toEqual(original);
  });

  it("creates messages: text from the number, MMS through a MediaUrl, and through a Messaging Service (201)", async () => {
    const platform = twilioPlatform(client, line);
    const text = await platform.sendMessage(message());
    expect(text).toMatchObject({ ok: true, guid: expect.stringMatching(/^SM[0-9a-f]{32}$/), service: "sms", segments: 1 });
    const mms = await platform.sendMessage(
      message({ text: null, attachments: [{ fileId: "fil_01contract", filename: "dot.png", mimeType: "image/png", size: 4, storageKey: "contract/dot.png" }] }),
    );
    expect(mms).toMatchObject({ ok: true });
    const both = await platform.sendMessage(
      message({ attachments: [{ fileId: "fil_01contract2", filename: "dot.png", mimeType: "image/png", size: 4, storageKey: "contract/dot.png" }] }),
    );
    expect(both).toMatchObject({ ok: true });
    const service = await twilioPlatform(client, { ...line, messagingServiceSid: SERVICE_SID }).sendMessage(message());
    expect(service).toMatchObject({ ok: true, guid: expect.stringMatching(/^SM/) });
    expect(requestViolations()).toEqual([]);
  });

  it("fetches a message and lists its media", async () => {
    const m = await client.fetchMessage(MESSAGE_SID);
    expect(m).toMatchObject({ sid: expect.stringMatching(/^SM/), direction: "outbound-api", date_created: expect.any(Number) });
    const media = await client.listMedia(MESSAGE_SID);
    expect(media[0]).toMatchObject({ sid: expect.stringMatching(/^ME/), content_type: "image/jpeg" });
    expect(client.mediaContentUrl(media[0]!)).toBe(`${mock.url}/2010-04-01/Accounts/ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Messages/SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Media/MEaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`);
    expect(requestViolations()).toEqual([]);
  });

  it("lists messages with the probe's, reconcile's and catch-up's filters", async () => {
    const since = Date.UTC(2026, 10, 25, 6, 30);
    const queries = [
      { pageSize: 1 },
      ...reconcileQueries({ to: "+15558675310" }, since, line).map((r) => r.query),
      ...reconcileQueries({ to: "+15558675310" }, since, { ...line, messagingServiceSid: SERVICE_SID }).map((r) => r.query),
      catchUpQuery(line, since),
      catchUpQuery({ ...line, messagingServiceSid: SERVICE_SID }, since),
    ];
    for (const query of queries) {
      const page = await client.listMessages(query);
      expect(page.messages.length).toBeGreaterThan(0);
      expect(page.messages[0]).toMatchObject({ sid: expect.any(String), date_sent: expect.any(Number) });
    }
    expect(requestViolations()).toEqual([]);
  });

  it("sends Basic AccountSid:AuthToken on every call, as the document's security scheme requires", async () => {
    const seen: (string | null)[] = [];
    const recording = createTwilioClient(
      { accountSid: ACCOUNT_SID, authToken: "contract-test-token", baseUrl: mock.url },
      { fetch: (input, init) => (seen.push(new Headers(init?.headers).get("authorization")), fetch(input, init)) },
    );
    await recording.listMessages({ pageSize: 1 });
    await recording.createMessage({ to: "+15558675310", from: line.handle, body: "hi" }, 15_000);
    expect(seen).toEqual(Array(2).fill(`Basic ${Buffer.from(`${ACCOUNT_SID}:contract-test-token`).toString("base64")}`));
    expect(requestViolations()).toEqual([]);
    // Prism does check the scheme: a call without credentials is refused, and logged as ours would be.
    const noAuth = await fetch(`${mock.url}/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json?PageSize=1`);
    expect(noAuth.status).toBe(401);
    expect(requestViolations()).toEqual([expect.stringContaining("Invalid security scheme")]);
  });
});
