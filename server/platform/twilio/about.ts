import type { ProviderAbout } from "../about-types";

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
} as const satisfies ProviderAbout;
