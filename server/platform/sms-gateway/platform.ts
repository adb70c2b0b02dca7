import { normalizeHandle } from "../../kernel/handles";
import type { DeliveryReport, OutgoingAction, OutgoingMessage, Platform, SendResult } from "../types";
import { describeSmsGatewayError, SmsGatewayError, parseIsoDate, type SGMessageState, type SmsGatewayClient } from "./client";

// The outbox ID is the message `id`, which the gateway refuses a second time (409): a send whose answer was lost is
// simply sent again, and a 409 proves the first was accepted. Text only: the API never sends MMS.

type Failure = Extract<SendResult, { ok: false }>;

const NOT_SMS = "SMS Gateway for Android sends SMS text only";

function dateOf(states: Record<string, string>, name: string): number | null {
  const value = states[name];
  return value ? parseIsoDate(value) : null;
}

function deliveryOf(state: SGMessageState, to: string): DeliveryReport | undefined {
  const mine =
    state.recipients.find((r) => normalizeHandle(r.phoneNumber) === normalizeHandle(to)) ??
    (state.recipients.length === 1 ? state.recipients[0] : undefined);
  const status = mine?.state ?? state.state;
  if (status === "Delivered") return { status: "delivered", at: dateOf(state.states, "Delivered") ?? Date.now(), reason: null };
  if (status === "Failed") {
    return { status: "failed", at: dateOf(state.states, "Failed") ?? Date.now(), reason: mine?.error || "SMS Gateway reports the SMS failed" };
  }
  return undefined;
}

function acceptedAt(state: SGMessageState): number {
  const dates = Object.values(state.states)
    .map(parseIsoDate)
    .filter((d): d is number => d !== null);
  return dates.length ? Math.min(...dates) : Date.now();
}

/** The cloud's 503 is a full queue or an offline phone. */
function classify(err: unknown): Failure {
  const reason = describeSmsGatewayError(err);
  if (!(err instanceof SmsGatewayError)) return { ok: false, permanent: false, unknown: true, unreachable: true, reason };
  switch (err.kind) {
    case "timeout":
    case "garbage":
      // It may have been queued; sending again is safe (a 409 then says so).
      return { ok: false, permanent: false, unknown: true, unreachable: true, reason };
    case "network":
      return err.sentRequest ? { ok: false, permanent: false, unknown: true, unreachable: true, reason } : { ok: false, permanent: false, unreachable: true, reason };
    case "http":
      break;
  }
  const status = err.status ?? 0;
  if (status === 400 || status === 413 || status === 422) {
    return { ok: false, permanent: true, reason: `SMS Gateway refused the message: ${err.detail ?? `HTTP ${status}`}` };
  }
  // Throttling, server errors, and credentials or a URL that are wrong until the line is connected again wait and retry
  // within the outbox window (unreachable: the item waits instead of using up its attempts).
  if (status === 429) {
    const reason = `SMS Gateway is throttling sends (HTTP 429${err.detail ? `: ${err.detail}` : ""})`;
    return { ok: false, permanent: false, unreachable: true, reason, ...(err.retryAfterMs !== null ? { retryAfterMs: err.retryAfterMs } : {}) };
  }
  return { ok: false, permanent: false, unreachable: true, reason };
}

export function smsGatewayPlatform(client: SmsGatewayClient): Platform {
  async function adopt(m: OutgoingMessage): Promise<SendResult> {
    let state: SGMessageState | null = null;
    try {
      state = await client.getMessage(m.idempotencyKey);
    } catch {
      // The 409 alone proves the gateway has it; its state arrives by webhook.
    }
    const delivery = state ? deliveryOf(state, m.to) : undefined;
    return { ok: true, guid: m.idempotencyKey, sentAt: state ? acceptedAt(state) : Date.now(), service: "sms", ...(delivery ? { delivery } : {}) };
  }

  const refuse = (what: string) => async (_: OutgoingAction): Promise<SendResult> => ({ ok: false, permanent: true, reason: `${what}: ${NOT_SMS}.` });

  return {
    name: "sms-gateway",

    async sendMessage(m) {
      if (m.isGroup) {
        return { ok: false, permanent: true, reason: `${NOT_SMS} to one number at a time (no MMS group chats): group messages cannot be sent on this line.` };
      }
      if (m.attachments.length) return { ok: false, permanent: true, reason: `${NOT_SMS} (no MMS): this message has an attachment.` };
      if (!m.text) return { ok: false, permanent: true, reason: "nothing to send: the message has no text." };
      try {
        // One message however long: the phone splits it into parts and reports how many (sms:sent).
        await client.sendMessage({ id: m.idempotencyKey, text: m.text, phoneNumbers: [m.to], withDeliveryReport: true });
        return { ok: true, guid: m.idempotencyKey, sentAt: Date.now(), service: "sms" };
      } catch (err) {
        if (err instanceof SmsGatewayError && err.kind === "http" && err.status === 409) return adopt(m);
        return classify(err);
      }
    },

    sendReaction: refuse("Reactions"),
    sendTyping: refuse("Typing indicators"),
    sendReceipt: refuse("Read receipts"),
  };
}
