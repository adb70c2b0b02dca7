import type { ProviderAbout } from "../about-types";

export const blueBubblesAbout = {
  name: "bluebubbles",
  label: "BlueBubbles (iMessage on a Mac)",
  short: "BlueBubbles",
  monitored: true,
  fields: [
    { key: "url", label: "Server URL", type: "url", placeholder: "http://mac.local:1234", example: "http://mac.local:1234", width: 240 },
    { key: "password", label: "Password", type: "password", placeholder: "BlueBubbles server password", example: "server-password", secret: true },
    { key: "sendTimeoutSeconds", label: "Send timeout (seconds)", type: "number", placeholder: "150", example: 150, optional: true, min: 5, max: 600, width: 120 },
  ],
} as const satisfies ProviderAbout;
