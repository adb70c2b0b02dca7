import { z } from "zod";

// Providers never touch the database: they answer what happened, and server/outbox and
// server/services record it.

export type ServiceName = "imessage" | "sms";

interface ChatRef {
  to: string;
  isGroup: boolean;
  /** The provider's opaque chat ID (a BlueBubbles chat GUID): used as given, never rebuilt. */
  providerChatId: string | null;
}

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
  storageKey: string;
}

export interface OutgoingMessage extends OutgoingAction {
  text: string | null;
  attachments: OutgoingAttachment[];
  replyToGuid: string | null;
  isAudioMessage: boolean;
  /** Set only where a send may fall back to SMS (an `auto` line, a pool); absent: the line's own. */
  service?: ServiceName;
}

export interface OutgoingReaction extends OutgoingAction {
  targetGuid: string;
  type: string;
  added: boolean;
}

export interface OutgoingTyping extends OutgoingAction {
  isTyping: boolean;
}

// `ok: false` is permanent (refused for good: fail the item), unknown (the provider may have sent
// it: reconcile before anything is sent again), or else transient (certainly not sent: retry;
// `unreachable`: no answer at all, so the item waits instead of failing).
export type SendResult =
  | {
      ok: true;
      guid: string;
      sentAt: number;
      service?: ServiceName;
      providerChatId?: string;
      segments?: number;
      delivery?: DeliveryReport;
    }
  | {
      ok: false;
      permanent: boolean;
      reason: string;
      unknown?: boolean;
      unreachable?: boolean;
      optedOut?: boolean;
      /** Not registered with iMessage: nothing was sent. */
      notIMessage?: boolean;
      retryAfterMs?: number;
    };

const DELIVERY_STATUSES = ["sent", "delivered", "undelivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryReport {
  status: DeliveryStatus;
  /** Unix ms; the time it reached us when the provider does not say. */
  at: number;
  reason: string | null;
}

export interface SentPart {
  guid: string;
  sentAt: number;
}

export type ReconcileResult =
  | { found: true; guid: string; sentAt: number; service?: ServiceName; providerChatId?: string }
  /** Not (wholly) there. `sentParts`: the leading parts that are, so that only the rest is sent (`resume`). */
  | { found: false; sentParts?: SentPart[] }
  | { found: null; reason: string; unreachable?: boolean };

export interface Platform {
  readonly name: string;
  sendMessage(message: OutgoingMessage, resume?: { sentParts: SentPart[] }): Promise<SendResult>;
  sendReaction(reaction: OutgoingReaction): Promise<SendResult>;
  sendTyping(typing: OutgoingTyping): Promise<SendResult>;
  sendReceipt(receipt: OutgoingAction): Promise<SendResult>;
  /** Did the provider carry it since `since`? `knownGuids` are never adopted twice. Providers whose sends are idempotent by key leave it out. */
  reconcile?(message: OutgoingMessage, since: number, knownGuids: Set<string>): Promise<ReconcileResult>;
  iMessageReachable?(handle: string): Promise<boolean | null>;
}

export interface ProviderAttachmentRef {
  ref: string;
  filename: string;
  mimeType: string;
  size: number | null;
}

export type ProviderInbound =
  | {
      kind: "message";
      guid: string;
      /** The contact who wrote it; for our own (isFromMe) messages, the chat's contact in a 1:1 chat. */
      sender: string;
      isFromMe: boolean;
      tempGuid: string | null;
      providerChatId: string | null;
      group: { id: string; participants: string[]; name: string | null } | null;
      text: string | null;
      attachments: ProviderAttachmentRef[];
      isAudioMessage: boolean;
      replyToGuid: string | null;
      service: ServiceName | null;
      sentAt: number;
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
  /** By the GUID the send returned; reports come unordered and repeated, even before the send's own answer. */
  | ({ kind: "status"; guid: string; segments: number | null } & DeliveryReport)
  | { kind: "send-error"; guid: string; tempGuid: string | null; reason: string }
  | { kind: "ignored"; reason: string };

export const CapabilitiesSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
type Capabilities = z.infer<typeof CapabilitiesSchema>;

export interface ProbeResult {
  ok: boolean;
  reason: string | null;
  capabilities: Capabilities;
  advancedFeatures: boolean;
  /** The handle the provider itself names for this connection (BlueBubbles: the Apple ID Messages is signed in with): proof the line may carry it. */
  handle?: string | null;
}
