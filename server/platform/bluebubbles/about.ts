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
  errors: {
    summary: "400, 404 and 413 fail the item with the server's message; an iMessage error fails it when it is final (the recipient is not registered with iMessage, an unknown chat, the Private API off) and is otherwise treated as unknown; 401/403 make the line wait; a timeout or a lost answer on a message is unknown and reconciled against the Mac's own history before anything is sent again.",
  },
} as const satisfies ProviderAbout;
