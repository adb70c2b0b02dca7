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
  errors: {
    summary: "Twilio's error codes below are mapped by number (they also name the ErrorCode of status callbacks); 401/403/404 make the line wait; 429 waits out Retry-After; any other 4xx fails the item with Twilio's own message; a 5xx, a timeout or a lost answer leaves the outcome unknown, and the outbox looks the message up in the line's Twilio message list before anything is sent again.",
    codes: TWILIO_ERROR_CODES,
  },
} as const satisfies ProviderAbout;
