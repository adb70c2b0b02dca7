import { describe, expect, it } from "vitest";
import { thrown } from "../../../tests/thrown";
import { ApiError } from "../../kernel/errors";
import { mapListedMessage, mapWebhook, mediaFilename, optOutChange, parseRawDlrDoneDate, statusMeaning, type TwilioLineView } from "./inbound";
import type { TwilioMessage } from "./schemas";

// Twilio's webhook forms in our terms: status callbacks, inbound messages, refusals.

const ACCOUNT = `AC${"1".repeat(32)}`;
const SERVICE = `MG${"2".repeat(32)}`;
const SID = `SM${"3".repeat(32)}`;
const MMS = `MM${"4".repeat(32)}`;
const LINE: TwilioLineView = { handle: "+15017122661", accountSid: ACCOUNT, messagingServiceSid: null };
const NOW = Date.UTC(2026, 10, 25, 7, 0, 0);

const form = (fields: Record<string, string>) => new URLSearchParams(fields);
const callback = (status: string, extra: Record<string, string> = {}) =>
  form({ SmsSid: SID, SmsStatus: status, MessageStatus: status, To: "+15558675310", MessageSid: SID, AccountSid: ACCOUNT, From: LINE.handle, ApiVersion: "2010-04-01", ...extra });
const inbound = (extra: Record<string, string> = {}) =>
  form({ SmsMessageSid: SID, NumMedia: "0", SmsSid: SID, SmsStatus: "received", Body: "hello", To: LINE.handle, NumSegments: "1", MessageSid: SID, AccountSid: ACCOUNT, From: "+15558675310", ApiVersion: "2010-04-01", ...extra });

const refusal = (fn: () => unknown) => thrown(fn, ApiError);

describe("status callbacks", () => {
  it("map every documented status: reports for sent and final states, nothing for the queue", () => {
    expect(mapWebhook(callback("sent"), LINE, NOW)).toEqual([{ kind: "status", guid: SID, status: "sent", at: NOW, reason: null, segments: null }]);
    expect(mapWebhook(callback("delivered", { RawDlrDoneDate: "2611250659" }), LINE, NOW)).toEqual([
      { kind: "status", guid: SID, status: "delivered", at: Date.UTC(2026, 10, 25, 6, 59), reason: null, segments: null },
    ]);
    expect(mapWebhook(callback("read"), LINE, NOW)[0]).toMatchObject({ status: "delivered", at: NOW });
    // Optional fields posted empty are absent.
    expect(mapWebhook(callback("sent", { ErrorCode: "", MessagingServiceSid: "", NumSegments: "" }), LINE, NOW)[0]).toMatchObject({ status: "sent", reason: null, segments: null });
    expect(mapWebhook(callback("undelivered", { ErrorCode: "30003", NumSegments: "2" }), LINE, NOW)[0]).toMatchObject({
      status: "undelivered",
      reason: "30003 unreachable destination handset (off or out of coverage)",
      segments: 2,
    });
    expect(mapWebhook(callback("failed", { ErrorCode: "30099" }), LINE, NOW)[0]).toMatchObject({ status: "failed", reason: "30099 (see https://www.twilio.com/docs/api/errors/30099)" });
    expect(mapWebhook(callback("failed"), LINE, NOW)[0]).toMatchObject({ status: "failed", reason: "failed (Twilio gave no error code)" });
    expect(mapWebhook(callback("canceled"), LINE, NOW)[0]).toMatchObject({ status: "failed", reason: "canceled before Twilio sent it" });
    expect(mapWebhook(callback("partially_delivered", { ErrorCode: "30008" }), LINE, NOW)[0]).toMatchObject({ status: "undelivered", reason: expect.stringContaining("only part") });
    for (const status of ["queued", "accepted", "scheduled", "sending"]) expect(mapWebhook(callback(status), LINE, NOW)[0]).toMatchObject({ kind: "ignored" });
    for (const status of Object.keys({ queued: 1, sending: 1, sent: 1, failed: 1, delivered: 1, undelivered: 1, receiving: 1, received: 1, accepted: 1, scheduled: 1, read: 1, partially_delivered: 1, canceled: 1 })) {
      expect(statusMeaning(status)).not.toBeNull();
    }
    expect(statusMeaning("toString")).toBeNull();
  });

  it("refuse unknown statuses, missing fields and other accounts' or numbers' messages with the field named", () => {
    expect(refusal(() => mapWebhook(callback("teleported"), LINE))).toMatchObject({ code: "invalid_parameter_value", param: "MessageStatus", status: 400 });
    const noSid = callback("sent");
    noSid.delete("MessageSid");
    expect(refusal(() => mapWebhook(noSid, LINE))).toMatchObject({ code: "missing_required_parameter", param: "MessageSid" });
    expect(refusal(() => mapWebhook(callback("sent", { MessageSid: "SM123" }), LINE))).toMatchObject({ code: "invalid_parameter_value", param: "MessageSid" });
    expect(refusal(() => mapWebhook(callback("sent", { ErrorCode: "abc" }), LINE))).toMatchObject({ code: "invalid_parameter_value", param: "ErrorCode" });
    expect(refusal(() => mapWebhook(callback("sent", { AccountSid: `AC${"9".repeat(32)}` }), LINE))).toMatchObject({ param: "AccountSid" });
    expect(refusal(() => mapWebhook(callback("sent", { From: "+15017122662" }), LINE))).toMatchObject({ param: "From" });
    // The same number however written.
    expect(mapWebhook(callback("sent", { From: "+1 (501) 712-2661" }), LINE, NOW)[0]).toMatchObject({ kind: "status" });
  });

  it("a Messaging Service line takes any of its pool's numbers, not another service's messages", () => {
    const line = { ...LINE, messagingServiceSid: SERVICE };
    expect(mapWebhook(callback("delivered", { From: "+15550001111", MessagingServiceSid: SERVICE }), line, NOW)[0]).toMatchObject({ kind: "status", status: "delivered" });
    expect(refusal(() => mapWebhook(callback("delivered", { MessagingServiceSid: `MG${"8".repeat(32)}` }), line))).toMatchObject({ param: "MessagingServiceSid" });
  });

  it("RawDlrDoneDate is YYMMDDhhmm in UTC; anything else is not a date", () => {
    expect(parseRawDlrDoneDate("2611251230")).toBe(Date.UTC(2026, 10, 25, 12, 30));
    expect(parseRawDlrDoneDate("2402291159")).toBe(Date.UTC(2024, 1, 29, 11, 59));
    for (const bad of ["2613011200", "2502291200", "2611252460", "261125123", "abcdefghij", "", undefined]) expect(parseRawDlrDoneDate(bad)).toBeNull();
    expect(mapWebhook(callback("delivered", { RawDlrDoneDate: "9999999999" }), LINE, NOW)[0]).toMatchObject({ at: NOW });
  });
});

describe("inbound messages", () => {
  it("become messages from the sender, with media as references to Twilio's URLs", () => {
    expect(mapWebhook(inbound(), LINE, NOW)).toEqual([
      {
        kind: "message",
        guid: SID,
        sender: "+15558675310",
        isFromMe: false,
        tempGuid: null,
        providerChatId: null,
        group: null,
        text: "hello",
        attachments: [],
        isAudioMessage: false,
        replyToGuid: null,
        service: "sms",
        sentAt: NOW,
      },
    ]);
    const url0 = `https://api.twilio.com/2010-04-01/Accounts/${ACCOUNT}/Messages/${MMS}/Media/ME${"5".repeat(32)}`;
    const mms = mapWebhook(inbound({ MessageSid: MMS, Body: "", NumMedia: "2", MediaUrl0: url0, MediaContentType0: "image/jpeg", MediaUrl1: `${url0}b`, MediaContentType1: "application/x-unknown" }), LINE, NOW)[0]!;
    expect(mms).toMatchObject({
      guid: MMS,
      text: null,
      attachments: [
        { ref: url0, filename: `ME${"5".repeat(32)}.jpg`, mimeType: "image/jpeg", size: null },
        { ref: `${url0}b`, filename: `ME${"5".repeat(32)}b`, mimeType: "application/x-unknown", size: null },
      ],
    });
    expect(refusal(() => mapWebhook(inbound({ NumMedia: "1" }), LINE))).toMatchObject({ code: "missing_required_parameter", param: "MediaUrl0" });
    expect(refusal(() => mapWebhook(inbound({ NumMedia: "11" }), LINE))).toMatchObject({ code: "invalid_parameter_value", param: "NumMedia" });
    expect(refusal(() => mapWebhook(inbound({ To: "+15017122662" }), LINE))).toMatchObject({ code: "invalid_parameter_value", param: "To" });
    const noFrom = inbound();
    noFrom.delete("From");
    expect(refusal(() => mapWebhook(noFrom, LINE))).toMatchObject({ code: "missing_required_parameter", param: "From" });
  });

  it("STOP and START keywords (alone, any case) and Advanced Opt-Out's OptOutType are opt-outs and opt-ins", () => {
    for (const body of ["STOP", " stop ", "StopAll", "unsubscribe", "cancel", "END", "quit", "revoke", "optout"]) expect(optOutChange(body)).toBe("stop");
    for (const body of ["START", "yes", "Unstop"]) expect(optOutChange(body)).toBe("start");
    for (const body of ["stop please", "please cancel", "help", "", null]) expect(optOutChange(body)).toBeUndefined();
    expect(optOutChange("arrêt", "STOP")).toBe("stop");
    expect(optOutChange("STOP", "HELP")).toBeUndefined();
    expect(mapWebhook(inbound({ Body: "Stop" }), LINE, NOW)[0]).toMatchObject({ kind: "message", text: "Stop", optOut: "stop" });
    expect(mapWebhook(inbound({ Body: "hola", OptOutType: "START" }), LINE, NOW)[0]).toMatchObject({ optOut: "start" });
    expect(mapWebhook(inbound(), LINE, NOW)[0]).not.toHaveProperty("optOut");
  });

  it("listed messages (catch-up): inbound ones only, at Twilio's time", () => {
    const listed: TwilioMessage = {
      sid: SID,
      account_sid: ACCOUNT,
      messaging_service_sid: null,
      from: "+15558675310",
      to: LINE.handle,
      body: "quit",
      status: "received",
      direction: "inbound",
      num_segments: 1,
      num_media: 0,
      error_code: null,
      error_message: null,
      date_created: NOW - 2000,
      date_sent: NOW - 1000,
      date_updated: NOW,
      uri: null,
    };
    expect(mapListedMessage(listed, [])).toMatchObject({ kind: "message", guid: SID, sender: "+15558675310", text: "quit", sentAt: NOW - 1000, optOut: "stop" });
    expect(mapListedMessage({ ...listed, direction: "outbound-api" }, [])).toMatchObject({ kind: "ignored" });
    expect(mediaFilename("https://api.twilio.com/x/Media/ME1.json", "image/png")).toBe("ME1.png");
  });
});
