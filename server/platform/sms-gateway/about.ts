import type { ProviderAbout } from "../about-types";

export const smsGatewayAbout = {
  name: "sms-gateway",
  label: "SMS Gateway for Android (SMS through a phone)",
  short: "SMS Gateway",
  monitored: true,
  fields: [
    { key: "url", label: "Gateway URL", type: "url", placeholder: "http://phone.lan:8080 or https://api.sms-gate.app/3rdparty/v1", example: "http://phone.lan:8080", width: 300 },
    { key: "username", label: "Username", type: "text", placeholder: "sms", example: "sms", optional: true },
    { key: "password", label: "Password", type: "password", placeholder: "shown in the app", example: "app-password", secret: true },
    { key: "signingKey", label: "Webhook signing key", type: "password", placeholder: "Settings > Webhooks > Signing key", example: "signing-key", secret: true },
    { key: "timeoutSeconds", label: "Request timeout (seconds)", type: "number", placeholder: "20", example: 20, optional: true, min: 1, max: 120, width: 120 },
  ],
  errors: {
    summary: "400 (the gateway's message quoted) and 413 fail the item; 401/403 make the line wait; 429, 5xx and the cloud's 503 (phone offline, queue full) are retried; a send whose answer was lost is sent again under the same ID, which the gateway answers 409 and the service adopts.",
  },
} as const satisfies ProviderAbout;
