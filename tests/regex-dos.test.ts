import { describe, expect, it } from "vitest";
import { buildUrl, parseRetryAfter } from "@/packages/client/src/client";
import { parseRetryAfter as serverRetryAfter } from "@/server/http-out/retry-after";
import { readSignedHeaders } from "@/packages/client/src/webhook-checks";
import { authenticate } from "@/server/services/access/api-keys";
import { graphqlActor } from "@/server/transports/graphql/context";
import { graphqlParam } from "@/server/transports/graphql/mask-error";
import { restShape } from "@/server/transports/graphql/inputs";
import { documentTooDeep } from "@/server/transports/graphql/yoga";
import { isPhoneNumber, normalizeHandle } from "@/server/kernel/handles";
import { parseIdempotencyKey } from "@/server/services/access/idempotency";
import { jsonTooDeep } from "@/server/transports/http/validation";
import { rejectUnsafeStrings } from "@/server/wire/parse";
import { isId } from "@/server/kernel/ids";
import { SimulatorMessageBody } from "@/server/services/schemas/simulator-requests";
import { routeTemplate, tableOf } from "@/server/transports/ops/routes";
import { BlueBubblesError } from "@/server/platform/bluebubbles/client";
import { classify } from "@/server/platform/bluebubbles/platform";
import { EmailSchema } from "@/server/services/accounts/accounts";
import { cleanFilename, mimeTypeOf } from "@/server/services/messaging/files";
import { verifyFileUrl } from "@/server/storage/signed-urls";
import { checkWebhookUrl, isForbiddenAddress } from "@/server/http-out/url-guard";

// Every regular expression that sees user input (handles, IDs, keys, cursors, URLs, headers,
// webhooks, signatures), fed about 1 MB of the input that would make it backtrack worst, must
// answer at once. The bound is generous (a DoS check, not a benchmark): a super-linear regexp
// takes minutes on these inputs, a linear one milliseconds.
//
// Audited (server/, app/, packages/client/src), and why each is linear:
// - handles.ts PHONE_CHARS /^\+?[\d\s().-]{4,}$/, /\d/, /\D/g, /^\+\d{4,15}$/: anchored, one class
//   per quantifier and no overlap between neighbours.
// - ids.ts BODY /^[0-9a-hjkmnp-tv-z]{26}$/; services/chats.ts FOREIGN_PREFIX ^(msg|cht|...)_:
//   anchored, bounded or literal alternatives.
// - auth/api-keys.ts /^Bearer\s+(\S+)\s*$/i (\s and \S disjoint) and KEY_FORMAT (bounded).
// - http/idempotency.ts KEY_FORMAT /^[\x21-\x7e]{1,255}$/: bounded.
// - http/validation.ts LONE_SURROGATE: one-unit lookarounds. jsonTooDeep and yoga.ts
//   documentTooDeep and the tRPC path trimming are loops, not regexps.
// - services/files.ts MIME /^[\w.+-]+\/[\w.+-]+$/ (the "/" separates disjoint runs),
//   cleanFilename's /[\\/]/ and control-character class; schemas/simulator-requests.ts mime_type (same
//   as MIME) and content_base64 /^[A-Za-z0-9+/=\s_-]+$/ (one class); platform/inbound-event.ts
//   mimeType (same as MIME).
// - services/lines/sandbox.ts /\s+/g, services/inbound/simulated-phone.ts /\s/g: one class.
// - transports/graphql/context.ts SESSION_COOKIE (;\s* then a literal), graphql/inputs.ts /[A-Z]/g,
//   transports/graphql/mask-error.ts /_([a-z])/g.
// - storage/signed-urls.ts /^\d{1,12}$/; storage/index.ts keys (internal, one class).
// - webhooks/url-guard.ts: /^\[(.*)\]$/ (anchored both ends); REWRITTEN: /%.*$/ (quadratic on
//   many '%') is an indexOf, and the unanchored /(\d+)\.(\d+)\.(\d+)\.(\d+)$/ (quadratic on
//   long digit runs) is an anchored test of the part after the last colon. /\.$/ is linear.
// - kernel/retry-after.ts /^\d+$/ on a trimmed response header (provider clients and the webhook sender).
// - zod's email regexp (services/accounts/accounts.ts EmailSchema): segments split by literal '.' and '@'.
// - packages/client: client.ts /^\d+(\.\d+)?$/ (Retry-After); REWRITTEN: buildUrl's /\/+$/
//   (quadratic on a long run of '/') is a loop; webhook-checks.ts /^\d{1,16}$/ and /\s+/
//   splits; sse.ts /^ /; cli/args.ts and cli/run.ts /\s+/g and /^\d+$/.
// - transports/ops/routes.ts (every request path, no account needed): REWRITTEN: /\/+$/ is a
//   loop, and a path over 2,048 characters is "unmatched" before the ID_SEGMENT test (anchored,
//   linear alternatives) or the manifest's route regexps see it.
// - platform/bluebubbles/platform.ts classify: /chat .* not found/ on the server's error text is
//   quadratic on one long line ("chat chat chat …"): the text is capped at 4 KiB first.
//   platform/matching.ts /\.[^.]*$/ and /\s+/g: one run per '.', linear.
// - transports/http/fast-routes.ts INBOUND /^\/api\/inbound\/([^/?#]+)(?:\?|$)/: anchored, one class.
// - platform/*: the /\/+$/ on provider URL settings (bluebubbles, sms-gateway, twilio index and
//   client files) is quadratic: rewritten with the URL length cap in the provider-URL change.
//   Provider answers: sms-gateway/schemas.ts timestamps (anchored; the offset regexp is
//   bounded), twilio/schemas.ts and inbound.ts (anchored, bounded), twilio/platform.ts (classes).
// - Not user input: PUBLIC_URL's /\/+$/ in platform/connection.ts and storage/signed-urls.ts, config.ts (environment), audio/ffmpeg.ts (ffmpeg's own output and path),
//   db/schema-diff.ts (migration SQL).
// - Skipped here: graphql/types/files.ts content_base64, being rewritten in another change.

const MB = 1_000_000;
const BOUND_MS = 1000;

function quickly<T>(label: string, fn: () => T): T {
  const started = performance.now();
  const value = fn();
  expect(performance.now() - started, label).toBeLessThan(BOUND_MS);
  return value;
}

async function quicklyAsync<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await fn();
  expect(performance.now() - started, label).toBeLessThan(BOUND_MS);
  return value;
}

const rep = (s: string, length = MB) => s.repeat(Math.ceil(length / s.length)).slice(0, length);

describe("regular expressions on user input are linear (1 MB of the worst input each, under a second)", () => {
  it("handles and IDs", () => {
    for (const input of [rep("1") + "x", `+${rep(" ")}x`, rep("(1)-") + "!", rep("+1")]) {
      quickly("normalizeHandle", () => normalizeHandle(input));
      quickly("isPhoneNumber", () => isPhoneNumber(input));
    }
    expect(normalizeHandle("+1 (555) 010-2000")).toBe("+15550102000");
    for (const input of [`msg_${rep("0")}`, `msg_${rep("a")}!`, rep("msg_")]) quickly("isId", () => expect(isId("message", input)).toBe(false));
  });

  it("API keys, idempotency keys, session cookies", async () => {
    for (const header of [`Bearer ${rep(" ")}x`, `Bearer x${rep(" ")}y`, `Bearer sk_live_${rep("a")}`, `Bearer ${rep("\t ")}`]) {
      await quicklyAsync("authenticate", () => expect(authenticate(header)).rejects.toMatchObject({ code: "invalid_api_key" }));
    }
    for (const key of [rep("a"), `${rep("!")} `]) quickly("parseIdempotencyKey", () => expect(() => parseIdempotencyKey(key)).toThrow());
    for (const cookie of [rep("; "), `;${rep(" ")}x`, rep("next-auth.session-token"), rep(";__Secure-")]) {
      await quicklyAsync("graphqlActor cookie", () =>
        expect(graphqlActor(new Request("http://x/", { headers: { cookie } }))).rejects.toMatchObject({ code: "missing_api_key" }),
      );
    }
  });

  it("strings, JSON and GraphQL documents from the body", () => {
    for (const input of [rep("\ud800\udc00"), rep("a\udc00"), rep("\udbff")]) {
      quickly("rejectUnsafeStrings", () => {
        try {
          rejectUnsafeStrings({ text: input });
        } catch {
          // refused or not, it answered
        }
      });
    }
    quickly("jsonTooDeep", () => expect(jsonTooDeep(rep('"\\'))).toBe(false));
    quickly("jsonTooDeep deep", () => expect(jsonTooDeep(rep("["))).toBe(true));
    quickly("documentTooDeep", () => expect(documentTooDeep(`"""${rep("{")}`)).toBe(false));
    quickly("documentTooDeep strings", () => expect(documentTooDeep(rep('"\\"{'))).toBe(false));
    quickly("documentTooDeep comments", () => expect(documentTooDeep(rep("#{\n"))).toBe(false));
    quickly("graphqlParam", () => graphqlParam(rep("_a_")));
    quickly("restShape", () => restShape({ [rep("aB")]: 1 }));
  });

  it("files: MIME types, names, simulator attachments", () => {
    for (const type of [rep("a"), `${rep("a")}/`, `a/${rep("a")}/`, rep("a/"), rep("+.")]) {
      quickly("mimeTypeOf", () => {
        try {
          mimeTypeOf(type);
        } catch {
          // invalid_parameter_value
        }
      });
    }
    quickly("cleanFilename", () => cleanFilename(rep("a/\u0001\\"), "text/plain"));
    for (const body of [
      { line: "+15550000000", from: "+15550000001", attachment: { filename: "a", mime_type: `${rep("a")}/`, content_base64: "aGk=" } },
      { line: "+15550000000", from: "+15550000001", attachment: { filename: "a", mime_type: "text/plain", content_base64: `${rep("A \n")}!` } },
    ]) {
      quickly("SimulatorMessageBody", () => expect(SimulatorMessageBody.safeParse(body).success).toBe(false));
    }
  });

  it("webhook URLs, addresses, Retry-After, signatures, email addresses and file URL signatures", async () => {
    for (const ip of [rep("%"), `${rep("%")}\n`, `::${rep("1")}`, `[${rep("1.")}]`, `::ffff:${rep("1")}.1.1.1`, rep(":1")]) {
      quickly("isForbiddenAddress", () => isForbiddenAddress(ip));
    }
    expect(isForbiddenAddress("::ffff:127.0.0.1")).toBe(true);
    expect(isForbiddenAddress("fe80::1%eth0")).toBe(true);
    expect(isForbiddenAddress("2606:4700::6810:84e5")).toBe(false);
    quickly("checkWebhookUrl", () => expect(() => checkWebhookUrl(`https://${rep("1")}.example/`, { allowInsecure: false })).toThrow());
    for (const value of [`${rep(" ")}x`, `1${rep(" ")}x`, `${rep("1")}.`, `1.${rep("1")}x`]) {
      quickly("parseRetryAfter", () => parseRetryAfter(value));
      quickly("server parseRetryAfter", () => serverRetryAfter(value));
    }
    quickly("buildUrl", () => expect(() => buildUrl(`${rep("/")}x`, "/v1/lines")).toThrow());
    expect(buildUrl("https://relay.example///", "/v1/lines")).toBe("https://relay.example/v1/lines");
    for (const headers of [
      { "x-webhook-signature": rep(" a"), "x-webhook-timestamp": String(Date.now()), "x-webhook-signature-previous": rep(" \t") },
      { "webhook-id": "x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": rep("v1, ") },
      { "x-webhook-signature": "a", "x-webhook-timestamp": rep("1") },
    ]) {
      quickly("readSignedHeaders", () => {
        try {
          readSignedHeaders(headers);
        } catch {
          // invalid_header
        }
      });
    }
    for (const email of [rep("a"), `${rep("a.")}@`, `a@${rep("a.")}1`, `a@${rep("a-")}`, `${rep("a")}@a`]) {
      quickly("EmailSchema", () => expect(EmailSchema.safeParse(email).success).toBe(false));
    }
    const bb = new BlueBubblesError({ kind: "http", status: 500, errorType: "iMessage Error", errorMessage: rep("chat "), operation: "POST /x", message: "x" } as never);
    quickly("BlueBubbles classify", () => expect(classify(bb, true)).toMatchObject({ ok: false }));
    await quicklyAsync("verifyFileUrl", async () => expect(await verifyFileUrl("file_x", rep("1"), "sig")).toBe(false));
  });

  it("request paths: every request's route template, with or without a build's manifest", () => {
    const table = tableOf(["/v1/messages"], [{ page: "/v1/[[...path]]", regex: "^/v1(?:/(.+?))?(?:/)?$" }]);
    for (const t of [table, null]) {
      quickly("routeTemplate slashes", () => expect(routeTemplate(`/v1${rep("/")}x`, t)).toBe("unmatched"));
      quickly("routeTemplate trailing", () => expect(routeTemplate(`/v1/messages${rep("/")}`, t)).toBe("unmatched"));
      quickly("routeTemplate segments", () => expect(routeTemplate(rep("/msg_aaaaaaaa"), t)).toBe("unmatched"));
      // Under the cap, a path keeps its route however many slashes end it.
      expect(routeTemplate(`/v1/messages${"/".repeat(2000)}`, t)).toBe("/v1/messages");
    }
  });
});
