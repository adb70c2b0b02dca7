import { ApiError } from "../../kernel/errors";
import { inboundTokenMatches, providerLine } from "../../platform/connection";
import type { InboundRequest } from "../../platform/provider";
import { findProvider } from "../../platform/registry";
import type { ProviderInbound } from "../../platform/types";
import { noteProviderUp } from "../lines/line-health";
import { findLine } from "../lines/lines";
import { type InboundOutcome, ingestProviderEvent } from "./provider-events";

export interface WebhookReceipt {
  counts: Record<InboundOutcome, number>;
  /** The provider's own answer body, when it expects one (Twilio: TwiML). */
  reply?: { contentType: string; body: string };
}

function decodeBody(format: "json" | "form", request: InboundRequest, label: string): unknown {
  const text = new TextDecoder().decode(request.body);
  if (format === "form") {
    const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") {
      throw new ApiError("unsupported_media_type", `${label} posts its webhooks as application/x-www-form-urlencoded, not ${type || "a body without a Content-Type"}.`);
    }
    return new URLSearchParams(text);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ApiError("invalid_json", `Not a ${label} webhook body: ${(err as Error).message.slice(0, 200)}`);
  }
}

export async function receiveProviderWebhook(lineId: string, request: InboundRequest): Promise<WebhookReceipt> {
  const unauthorized = new ApiError("invalid_inbound_token", "Missing or wrong token for this line's inbound URL.");
  const line = lineId.startsWith("ln_") ? await findLine(lineId) : null;
  const provider = line ? findProvider(line.provider) : null;
  if (!line || !provider?.inbound || line.isSandbox) throw unauthorized;
  const inbound = provider.inbound;
  // Signed providers' too: a request signed correctly but without the line's token is refused.
  if (!inboundTokenMatches(line, request.url.searchParams.get("token"))) throw unauthorized;
  const pl = providerLine(line);
  if (inbound.auth === "signature") {
    const refusal = inbound.verify ? inbound.verify(request, pl) : { code: "invalid_signature" as const, message: "This provider's webhooks cannot be verified." };
    if (refusal) throw new ApiError(refusal.code, refusal.message);
  }
  const body = decodeBody(inbound.format ?? "json", request, provider.label);
  let events: ProviderInbound[];
  try {
    events = inbound.parse(body, pl);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("invalid_json", `Not a ${provider.label} webhook body: ${(err as Error).message.slice(0, 200)}`);
  }
  await noteProviderUp(line.id, "webhook");
  const counts: Record<InboundOutcome, number> = { stored: 0, duplicate: 0, adopted: 0, ignored: 0 };
  for (const event of events) counts[await ingestProviderEvent(line, pl, event)]++;
  return { counts, ...(inbound.reply ? { reply: inbound.reply } : {}) };
}
