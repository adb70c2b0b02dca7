import { z } from "zod";

// The messaging providers behind one interface. A line is carried by one provider (the
// built-in simulated platform, a BlueBubbles Mac, ...); server/platform/registry.ts maps a
// provider's name to its settings schema and factory. Providers never touch the database:
// they answer what happened, and server/outbox and server/services record it.

export type ServiceName = "imessage" | "sms";

/** What a provider may know of the chat it sends to. */
interface ChatRef {
  /** Our chat identifier: a contact's handle, or a group chat's identifier. */
  to: string;
  isGroup: boolean;
  /** The provider's own, opaque chat ID when it gave one (a BlueBubbles chat GUID); never rebuilt. */
  providerChatId: string | null;
}

/** What every outgoing action carries. */
export interface OutgoingAction extends ChatRef {
  /** The outbox item ID: the provider must not act twice for one key where it can tell. */
  idempotencyKey: string;
  lineHandle: string;
}

interface OutgoingAttachment {
  fileId: string;
  filename: string;
  mimeType: string;
  size: number;
  /** Where the storage backend keeps the bytes (server/storage). */
  storageKey: string;
}

export interface OutgoingMessage extends OutgoingAction {
  text: string | null;
  attachments: OutgoingAttachment[];
  replyToGuid: string | null;
  isAudioMessage: boolean;
  /**
   * The service to send by, set only for a message that may fall back to SMS (an `auto` line,
   * a pool): "sms" once the recipient is known to have no iMessage. Absent: the line's own.
   */
  service?: ServiceName;
}

export interface OutgoingReaction extends OutgoingAction {
  targetGuid: string;
  type: string;
  /** False removes the reaction. */
  added: boolean;
}

export interface OutgoingTyping extends OutgoingAction {
  isTyping: boolean;
}

/**
 * What became of one send. `ok: false` is one of three things:
 * - permanent: the provider refused for good (unknown chat, not registered): fail the item.
 * - unknown: the provider may have sent it (timeout, dropped connection, a 500 after its own
 *   wait): ask the provider (reconcile) before anything is sent again.
 * - otherwise transient: it certainly was not sent; retry later. `unreachable` says the
 *   provider did not answer at all (for the line's health; the item waits instead of failing).
 */
export type SendResult =
  | {
      ok: true;
      guid: string;
      sentAt: number;
      service?: ServiceName;
      providerChatId?: string;
      /** How many SMS segments the provider split the text into, when it says. */
      segments?: number;
      /** A delivery status the provider already reported with its answer (a send it already held). */
      delivery?: DeliveryReport;
    }
  | {
      ok: false;
      permanent: boolean;
      reason: string;
      unknown?: boolean;
      unreachable?: boolean;
      /** The provider refused because the recipient opted out (replied STOP): later sends fail fast. */
      optedOut?: boolean;
      /** The provider refused because the recipient is not registered with iMessage: nothing was sent. */
      notIMessage?: boolean;
      /** The provider asked us to wait this long before trying again (HTTP 429 Retry-After). */
      retryAfterMs?: number;
    };

/** Where a sent message stands after the provider accepted it (ranked: sent, then one final state). */
const DELIVERY_STATUSES = ["sent", "delivered", "undelivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One delivery report for one of our sent messages. */
export interface DeliveryReport {
  status: DeliveryStatus;
  /** When the provider says it happened (Unix ms); the time it reached us when it does not say. */
  at: number;
  /** The provider's error code and reason for undelivered and failed; null otherwise. */
  reason: string | null;
}

/** A provider that sends one message in several parts (an attachment, then its text). */
export interface SentPart {
  guid: string;
  sentAt: number;
}

export type ReconcileResult =
  | { found: true; guid: string; sentAt: number; service?: ServiceName; providerChatId?: string }
  /** Not (wholly) there. `sentParts`: the leading parts that are, so that only the rest is sent. */
  | { found: false; sentParts?: SentPart[] }
  /** The provider could not be asked: try again later, still unknown. */
  | { found: null; reason: string; unreachable?: boolean };

export interface Platform {
  readonly name: string;
  /** Sends a message; `resume.sentParts` are leading parts a reconcile found already sent. */
  sendMessage(message: OutgoingMessage, resume?: { sentParts: SentPart[] }): Promise<SendResult>;
  sendReaction(reaction: OutgoingReaction): Promise<SendResult>;
  sendTyping(typing: OutgoingTyping): Promise<SendResult>;
  sendReceipt(receipt: OutgoingAction): Promise<SendResult>;
  /**
   * After an attempt whose outcome was unknown: did the provider carry this message since
   * `since` (Unix ms)? `knownGuids`: messages of that chat we already hold (never adopted
   * twice). Providers whose sends are idempotent by key leave it out; their send is simply
   * repeated.
   */
  reconcile?(message: OutgoingMessage, since: number, knownGuids: Set<string>): Promise<ReconcileResult>;
  /** Whether `handle` can receive iMessage, for providers that can ask (null: they could not tell). */
  iMessageReachable?(handle: string): Promise<boolean | null>;
}

/** A reference to an inbound attachment the provider still holds; downloaded only when new. */
export interface ProviderAttachmentRef {
  ref: string;
  filename: string;
  mimeType: string;
  size: number | null;
}

/** One provider event, mapped to our terms. */
export type ProviderInbound =
  | {
      kind: "message";
      /** The provider's message ID: the dedupe key. */
      guid: string;
      /** The contact who wrote it; for our own (isFromMe) messages, the chat's contact in a 1:1 chat. */
      sender: string;
      isFromMe: boolean;
      /** The outbox ID we sent it under, when the provider echoes it. */
      tempGuid: string | null;
      providerChatId: string | null;
      group: { id: string; participants: string[]; name: string | null } | null;
      text: string | null;
      attachments: ProviderAttachmentRef[];
      isAudioMessage: boolean;
      replyToGuid: string | null;
      service: ServiceName | null;
      sentAt: number;
      /** The contact opted out of (STOP) or back into (START) messages from this line with it. */
      optOut?: "stop" | "start";
    }
  | {
      kind: "reaction";
      guid: string;
      sender: string;
      isFromMe: boolean;
      providerChatId: string | null;
      targetGuid: string;
      reaction: "love" | "like" | "dislike" | "laugh" | "emphasize" | "question";
      added: boolean;
      sentAt: number;
    }
  | { kind: "typing"; sender: string; providerChatId: string | null; isTyping: boolean }
  /** The contact read our messages up to `readAt` (BlueBubbles: an updated-message of our own with dateRead). */
  | { kind: "read"; guid: string; sender: string | null; providerChatId: string | null; readAt: number }
  /**
   * A delivery report for a message we sent, by the provider's ID for it (the GUID its send
   * returned). Reports come unordered and repeated, even before the send's own answer.
   */
  | ({ kind: "status"; guid: string; segments: number | null } & DeliveryReport)
  /** The provider reports that a send failed after it accepted it. */
  | { kind: "send-error"; guid: string; tempGuid: string | null; reason: string }
  | { kind: "ignored"; reason: string };

/** Probed capabilities as stored (Line.capabilities): flat facts, provider-specific names. */
export const CapabilitiesSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
type Capabilities = z.infer<typeof CapabilitiesSchema>;

/** What a provider says a line can do, probed. */
export interface ProbeResult {
  ok: boolean;
  /** Why the probe failed, or what is missing (readable, no secrets). */
  reason: string | null;
  /** Private API / helper / server version etc.: provider-specific, shown to owners. */
  capabilities: Capabilities;
  /** Reactions, typing, read receipts, replies and voice memos. */
  advancedFeatures: boolean;
  /** The handle the provider itself names for this connection (BlueBubbles: the Apple ID Messages is signed in with): proof the line may carry it. */
  handle?: string | null;
}
