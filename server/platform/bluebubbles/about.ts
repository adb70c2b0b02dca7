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
  handle: {
    label: "Apple ID or phone number",
    placeholder: "you@icloud.com",
    help: "The account Messages is signed in with on the Mac. Leave it empty to take it from the Mac when the test passes.",
  },
  fixes: [
    { when: ["Unauthorized", "HTTP 401", "HTTP 403"], say: "The password is wrong: check BlueBubbles Server → Settings → Password on the Mac (the server's password, not your Apple ID's)." },
    { when: ["address refused"], say: "This URL points to a private or local address, which this server refuses; the operator can allow it on a trusted network (PROVIDER_ALLOW_PRIVATE=true)." },
    { when: ["could not reach BlueBubbles", "ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH"], say: "Nothing answered at this URL: check that BlueBubbles Server is running on the Mac and copy its address from Settings → Connection." },
    { when: ["did not answer in time"], say: "BlueBubbles did not answer in time: wake the Mac (keep it from sleeping in Energy settings) and test again." },
    { when: ["unexpected response", "HTTP 404"], say: "Something other than BlueBubbles Server answered at this URL: check the address and port." },
  ],
  errors: {
    summary: "400, 404 and 413 fail the item with the server's message; an iMessage error fails it when it is final (the recipient is not registered with iMessage, an unknown chat, the Private API off) and is otherwise treated as unknown; 401/403 make the line wait; a timeout or a lost answer on a message is unknown and reconciled against the Mac's own history before anything is sent again.",
  },
} as const satisfies ProviderAbout;
