import { z } from "zod";
import { SCOPES } from "../../services/access/scopes";
import { config } from "../../kernel/config";
import { ERROR_CODES, type ErrorCode } from "../../kernel/errors";
import { PROVIDER_ABOUTS, type ProviderAbout } from "../../platform/about";
import { IDEMPOTENCY_KEY_PATTERN } from "../../services/access/idempotency";
import { ErrorSchema } from "../../wire/responses";
import { jsonSchemaOf, type JsonSchema } from "./json-schema";
import { WEBHOOK_EVENTS } from "../../webhooks/event-names";
import { COMMON_ERRORS, type Operation } from "../../services/operation";
import { OPERATIONS } from "../../services/operations";

// The OpenAPI 3.1 document of /v1, built from the operation list and its zod schemas (JSON
// Schema 2020-12, which OpenAPI 3.1 uses as is). Served at /v1/openapi.json, rendered at /docs.

const COMPONENTS = "#/components/schemas/";

/** Converts a zod schema, moving named sub-schemas (`.meta({ id })`) into `components`. */
function convert(schema: z.ZodType, io: "input" | "output", components: Record<string, JsonSchema>): JsonSchema {
  const json = jsonSchemaOf(schema, io);
  const text = JSON.stringify(json).replaceAll('"#/$defs/', `"${COMPONENTS}`);
  const { $schema: _, $defs, ...rest } = JSON.parse(text) as JsonSchema & { $defs?: Record<string, JsonSchema> };
  for (const [name, def] of Object.entries($defs ?? {})) components[name] = def;
  return rest;
}

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request",
  401: "Not authenticated",
  403: "Not allowed",
  404: "Not found",
  409: "Conflict",
  413: "Content too large",
  415: "Unsupported media type",
  429: "Rate limited",
  431: "Request headers too large",
  500: "Unexpected error",
  503: "Unavailable",
};

function hasRequired(schema: z.ZodType): boolean {
  const json = z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" }) as { required?: string[]; anyOf?: unknown[] };
  return Boolean(json.required?.length || json.anyOf);
}

/** What every operation of its kind answers, whatever op.errors says: validation, the JSON body, Idempotency-Key. */
function implicitErrors(op: Operation): ErrorCode[] {
  const codes: ErrorCode[] = [];
  if (op.query || op.body) codes.push("invalid_parameter_value");
  if ((op.query && hasRequired(op.query)) || (op.body && hasRequired(op.body))) codes.push("missing_required_parameter");
  if (op.body) codes.push("invalid_json", "request_too_large", "unsupported_media_type");
  if (op.method === "POST") codes.push("invalid_parameter_value", "idempotency_key_reused", "idempotency_key_in_use");
  return codes;
}

/** The error codes an operation may answer, in the order they are documented. */
function errorCodesOf(op: Operation): ErrorCode[] {
  return [...new Set<ErrorCode>([...op.errors, ...implicitErrors(op), ...COMMON_ERRORS])].filter((code) => op.scope || code !== "insufficient_scope");
}

function errorResponses(op: Operation) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(op)) {
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, codes]) => [
      String(status),
      {
        description: `${STATUS_TEXT[status] ?? "Error"}: ${codes.map((c) => `\`${c}\``).join(", ")}`,
        headers: status === 429 ? { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait" } } : undefined,
        content: {
          "application/json": {
            schema: { allOf: [{ $ref: `${COMPONENTS}Error` }, { properties: { error: { properties: { code: { enum: codes } } } } }] },
            examples: Object.fromEntries(
              codes.map((code) => [
                code,
                { value: { error: { type: ERROR_CODES[code].type, code, message: "…" }, request_id: "req_01h2x3y4z5a6b7c8d9e0f1g2h3" } },
              ]),
            ),
          },
        },
      },
    ]),
  );
}

function queryParameters(op: Operation, components: Record<string, JsonSchema>) {
  if (!op.query) return [];
  const json = convert(op.query, "input", components) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, schema]) => {
    const { description, ...rest } = schema;
    return { name, in: "query", required: json.required?.includes(name) ?? false, description, schema: rest };
  });
}

function curlExample(op: Operation, base: string): string {
  const lines = [`curl${op.method === "GET" ? "" : ` -X ${op.method}`} "${base}${op.path}${op.method === "GET" && op.example ? `?${new URLSearchParams(op.example as Record<string, string>)}` : ""}"`];
  lines.push('  -H "Authorization: Bearer $RELAY_API_KEY"');
  if (op.upload) lines.push('  -H "Content-Type: image/png" -H "X-Filename: photo.png"', "  --data-binary @photo.png");
  else if (op.method !== "GET") {
    lines.push('  -H "Content-Type: application/json"');
    if (op.method === "POST" && op.body) lines.push('  -H "Idempotency-Key: $(uuidgen)"');
    lines.push(`  -d '${JSON.stringify(op.example ?? {})}'`);
  }
  return lines.join(" \\\n");
}

function buildDocument() {
  const base = config().PUBLIC_URL;
  const components: Record<string, JsonSchema> = {};
  convert(ErrorSchema, "output", components);
  components.RequestId = {
    type: "object",
    properties: { request_id: { type: "string", description: "req_ ID of this request, also the Request-Id header" } },
    required: ["request_id"],
  };
  const event = z
    .object({
      event: z.enum(WEBHOOK_EVENTS),
      data: z
        .unknown()
        .describe(
          "message.*: a Message; reaction.*: a Reaction; message.failed: { outbox_id, line_id, line_handle, chat_id, to, error, attempts, failed_at }; outbox.approval_requested (opt-in): an OutboxItem waiting for the owner's approval, plus api_key_id",
        ),
      timestamp: z.number().int().describe("Unix ms, also X-Webhook-Timestamp"),
      delivery_id: z.string().describe("dlv_ ID, also X-Webhook-Delivery-Id: deduplicate on it"),
    })
    .meta({ id: "WebhookEvent" });
  const eventSchema = convert(event, "output", components);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, op] of Object.entries(OPERATIONS) as [string, Operation][]) {
    const success = op.redirect
      ? { "302": { description: "Redirect to a signed download URL", headers: { Location: { schema: { type: "string" } } } } }
      : op.stream
        ? { "200": { description: "Server-sent events; each event's data is a WebhookEvent", content: { "text/event-stream": { schema: { $ref: `${COMPONENTS}WebhookEvent` } } } } }
        : {
          [String(op.status ?? 200)]: {
            description: "Success. Every JSON body also carries `request_id`.",
            headers: { "Request-Id": { schema: { type: "string" }, description: "Also `request_id` in the body" } },
            content: { "application/json": { schema: { allOf: [op.response ? convert(op.response, "output", components) : { type: "object" }, { $ref: `${COMPONENTS}RequestId` }] } } },
          },
        };
    const parameters = [
      ...queryParameters(op, components),
      ...(op.method === "POST"
        ? [
            {
              name: "Idempotency-Key",
              in: "header",
              required: false,
              description:
                "1 to 255 printable ASCII characters, no spaces (a UUID fits): a retry with the same key and body within 24 h answers the first response (Idempotent-Replayed: true) and never sends twice. Keys belong to the API key; the same key with another request is 400 `idempotency_key_reused`.",
              schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN, minLength: 1, maxLength: 255 },
            },
          ]
        : []),
      ...(op.upload ? [{ name: "X-Filename", in: "header", required: false, description: "The file's name (may be percent-encoded)", schema: { type: "string" } }] : []),
    ];
    paths[op.path] ??= {};
    paths[op.path]![op.method.toLowerCase()] = {
      operationId,
      tags: [op.tag],
      summary: op.summary,
      description: [op.description, op.scope ? `Scope: \`${op.scope}\`.` : "Any key (no scope needed)."].filter(Boolean).join("\n\n"),
      ...(op.scope ? { "x-scope": op.scope } : {}),
      parameters: parameters.length ? parameters : undefined,
      requestBody: op.upload
        ? { required: true, content: { "*/*": { schema: { type: "string", format: "binary" } } } }
        : op.body
          ? {
              required: true,
              content: { "application/json": { schema: convert(op.body, "input", components), ...(op.example ? { example: op.example } : {}) } },
            }
          : undefined,
      responses: { ...success, ...errorResponses(op) },
      "x-codeSamples": [{ lang: "shell", label: "curl", source: curlExample(op, base) }],
    };
  }

  const webhooks = Object.fromEntries(
    WEBHOOK_EVENTS.map((name) => [
      name,
      {
        post: {
          // The operations' tag: renderers then list the events with the webhook endpoints,
          // where an untagged `webhooks` section gets a second "Webhooks" group of its own.
          tags: ["Webhooks"],
          summary: name,
          description:
            "Signed with X-Webhook-Signature (hex HMAC-SHA256 of `<X-Webhook-Timestamp>.<raw body>` keyed with the webhook secret) and the Standard Webhooks headers. Answer 2xx within 15 s; otherwise retried after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.",
          requestBody: { content: { "application/json": { schema: eventSchema } } },
          responses: { "200": { description: "Received" } },
        },
      },
    ]),
  );
  return {
    openapi: "3.1.0",
    info: {
      title: "Relay API",
      version: "1.0.0",
      description:
        "Send and receive messages on your lines. Authenticate with `Authorization: Bearer sk_live_...`; each operation names the scope it needs (" +
        SCOPES.map((s) => `\`${s}\``).join(", ") +
        "). Times are Unix milliseconds; lists are pages with `has_more` and an opaque `next_cursor`. Errors are `{ error: { type, code, message, param? }, request_id }` with the codes listed per operation (every code: `x-error-codes`).\n\n" +
        PROVIDER_ERRORS,
    },
    servers: [{ url: base }],
    security: [{ apiKey: [] }],
    tags: [...new Set(Object.values(OPERATIONS).map((o) => o.tag))].map((name) => ({ name })),
    paths,
    webhooks,
    components: {
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", bearerFormat: "sk_live_..." } },
      schemas: components,
    },
    "x-error-codes": Object.fromEntries(Object.entries(ERROR_CODES).map(([code, { type, status }]) => [code, { type, status }])),
    "x-provider-error-codes": Object.fromEntries(ABOUTS.flatMap((p) => (p.errors?.codes ? [[p.name, p.errors.codes]] : []))),
  };
}

const ABOUTS: readonly ProviderAbout[] = PROVIDER_ABOUTS;
const ON_SEND = { fail: "fails the item", retry: "retried", wait: "line waits" } as const;

/** How provider refusals reach an outbox item: each provider's own description, with the codes it maps by number. */
const PROVIDER_ERRORS = [
  "## Provider errors and delivery status",
  "On SMS lines an outbox item is `sent` once the provider accepted the message; the message's `delivery_status` (extension: `sent` | `delivered` | `undelivered` | `failed`, with `delivered_at` and `delivery_error`) then follows the provider's reports, and the opt-in webhook events `message.delivered` and `message.undelivered` tell each final state once. A provider refusal that will not change fails the item at once (`message.failed`, `error` = the provider's code and reason); throttling and the provider's own trouble are retried within the outbox window; refused credentials make the line wait, degraded, until it is connected again.",
  ...ABOUTS.flatMap((p) =>
    p.errors
      ? [
          "",
          `${p.label}: ${p.errors.summary}`,
          ...(p.errors.codes
            ? ["", `${p.short} codes (\`x-provider-error-codes\`):`, "", "| code | on a send | meaning |", "|---|---|---|", ...p.errors.codes.map((c) => `| ${c.code} | ${ON_SEND[c.action]} | ${c.reason} |`)]
            : []),
        ]
      : [],
  ),
].join("\n");

let cached: { base: string; doc: ReturnType<typeof buildDocument> } | undefined;

export function openApiDocument(): ReturnType<typeof buildDocument> {
  const base = config().PUBLIC_URL;
  if (cached?.base !== base) cached = { base, doc: buildDocument() };
  return cached.doc;
}
