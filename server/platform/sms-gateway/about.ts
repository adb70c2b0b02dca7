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
  handle: {
    label: "The phone's number",
    placeholder: "+15551234567",
    help: "The number of the SIM the phone sends from, in E.164 form (the app does not report it).",
  },
  fixes: [
    { when: ["refused the username or password"], say: "The username or password is wrong: open SMS Gateway on the phone (Local server or Cloud server card) and copy them again." },
    { when: ["no SMS Gateway API at this URL"], say: "No SMS Gateway API at this URL: the phone's local server is http://<the phone's address>:8080, the cloud's https://api.sms-gate.app/3rdparty/v1." },
    { when: ["address refused"], say: "This URL points to a private or local address, which this server refuses; the operator can allow it on a trusted network (PROVIDER_ALLOW_PRIVATE=true)." },
    { when: ["could not reach SMS Gateway", "did not answer in time", "dropped mid-request"], say: "Could not reach the phone: start the app's local server (or use the cloud server), keep the phone awake and on the same network as this server." },
  ],
  errors: {
    summary: "400 (the gateway's message quoted) and 413 fail the item; 401/403 make the line wait; 429, 5xx and the cloud's 503 (phone offline, queue full) are retried; a send whose answer was lost is sent again under the same ID, which the gateway answers 409 and the service adopts.",
  },
} as const satisfies ProviderAbout;
