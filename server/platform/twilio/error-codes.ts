import type { ProviderErrorCode } from "../about-types";

// Twilio publishes no permanent/transient flag: this table is our policy. It also names the ErrorCode of status
// callbacks, which carry only the number.

type TwilioErrorCategory = "recipient" | "content" | "account" | "throttling" | "delivery";

type TwilioErrorAction = "fail" | "retry" | "wait";

export interface TwilioErrorCodeInfo extends ProviderErrorCode {
  code: number;
  category: TwilioErrorCategory;
  action: TwilioErrorAction;
  reason: string;
  /** 21610: the recipient replied STOP; later sends to them fail without asking Twilio. */
  optedOut?: true;
}

export const TWILIO_ERROR_CODES: readonly TwilioErrorCodeInfo[] = [
  { code: 21211, category: "recipient", action: "fail", reason: "the 'To' number is not a valid phone number" },
  { code: 21408, category: "recipient", action: "fail", reason: "sending to this region is not enabled for the account (Geo Permissions)" },
  { code: 21610, category: "recipient", action: "fail", reason: "the recipient replied STOP to this sender (unsubscribed); they must reply START first", optedOut: true },
  { code: 21612, category: "recipient", action: "fail", reason: "the 'To' number cannot be reached by SMS from this sender" },
  { code: 21614, category: "recipient", action: "fail", reason: "the 'To' number is not a mobile number (cannot receive SMS)" },
  { code: 21635, category: "recipient", action: "fail", reason: "the 'To' number is a landline" },
  { code: 30005, category: "recipient", action: "fail", reason: "unknown destination handset (the number does not exist)" },
  { code: 30006, category: "recipient", action: "fail", reason: "landline or unreachable carrier" },
  { code: 21602, category: "content", action: "fail", reason: "the message has neither text nor media" },
  { code: 21617, category: "content", action: "fail", reason: "the text is longer than 1600 characters" },
  { code: 30004, category: "content", action: "fail", reason: "message blocked (by the recipient, the carrier or Twilio)" },
  { code: 30007, category: "content", action: "fail", reason: "filtered by the carrier as spam or against its guidelines" },
  { code: 30032, category: "content", action: "fail", reason: "the toll-free sender number is not verified" },
  { code: 30034, category: "content", action: "fail", reason: "the sender number is not registered for US A2P 10DLC" },
  { code: 63016, category: "content", action: "fail", reason: "outside the 24-hour window in which free-form WhatsApp messages are allowed" },
  { code: 20003, category: "account", action: "wait", reason: "Twilio refused the Account SID and Auth Token (connect the line again with valid ones)" },
  { code: 21606, category: "account", action: "fail", reason: "the 'From' number is not an SMS-capable number of this account" },
  { code: 21608, category: "account", action: "fail", reason: "trial accounts may only send to verified numbers, and the 'To' number is not one" },
  { code: 21659, category: "account", action: "fail", reason: "the 'From' number is not a Twilio number of this account" },
  { code: 21660, category: "account", action: "fail", reason: "the 'From' number belongs to another account" },
  { code: 20429, category: "throttling", action: "retry", reason: "too many requests (Twilio's rate limit)" },
  { code: 30001, category: "throttling", action: "retry", reason: "queue overflow: too many messages queued for this sender" },
  { code: 30022, category: "throttling", action: "retry", reason: "US A2P 10DLC throughput limit exceeded" },
  { code: 30003, category: "delivery", action: "retry", reason: "unreachable destination handset (off or out of coverage)" },
  { code: 30008, category: "delivery", action: "retry", reason: "unknown error from the carrier" },
];
