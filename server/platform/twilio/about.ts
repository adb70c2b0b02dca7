import type { ProviderAbout } from "../about-types";
import { TWILIO_ERROR_CODES } from "./error-codes";

export const twilioAbout = {
  name: "twilio",
  label: "Twilio (SMS and MMS)",
  short: "Twilio",
  monitored: true,
  fields: [
    { key: "accountSid", label: "Account SID", type: "text", placeholder: "AC…", example: "AC0123456789abcdef0123456789abcdef", width: 300 },
    { key: "authToken", label: "Auth token", type: "password", placeholder: "Twilio auth token", example: "auth-token", secret: true },
    { key: "messagingServiceSid", label: "Messaging Service SID", type: "text", placeholder: "MG… (optional)", example: "MG0123456789abcdef0123456789abcdef", optional: true, width: 260 },
    { key: "baseUrl", label: "API base URL", type: "url", placeholder: "https://api.twilio.com (optional)", example: "https://api.twilio.com", optional: true, width: 240 },
    { key: "sendTimeoutSeconds", label: "Send timeout (seconds)", type: "number", placeholder: "15", example: 15, optional: true, min: 2, max: 120, width: 120 },
  ],
  handle: {
    label: "Twilio number",
    placeholder: "+15017122661",
    help: "The Twilio phone number this line sends from and receives on, in E.164 form (with a Messaging Service, the number people text).",
  },
  fixes: [
    { when: ["20003", "HTTP 401"], say: "The Account SID or Auth token is wrong: copy both from the Twilio Console → Account info." },
    { when: ["E.164"], say: "Enter the line's Twilio number in E.164 form (+15017122661), or a Messaging Service SID." },
    { when: ["address refused"], say: "This base URL points to a private or local address, which this server refuses; leave API base URL empty to use Twilio's." },
    { when: ["could not reach Twilio", "did not answer in time"], say: "This server could not reach Twilio's API: check its internet access (and proxy) and test again." },
    { when: ["HTTP 404", "20404"], say: "Twilio does not know this account or Messaging Service: check the SIDs in the Twilio Console." },
  ],
  errors: {
    summary: "Twilio's error codes below are mapped by number (they also name the ErrorCode of status callbacks); 401/403/404 make the line wait; 429 waits out Retry-After; any other 4xx fails the item with Twilio's own message; a 5xx, a timeout or a lost answer leaves the outcome unknown, and the outbox looks the message up in the line's Twilio message list before anything is sent again.",
    codes: TWILIO_ERROR_CODES,
  },
} as const satisfies ProviderAbout;
