// The messaging platform behind one interface. The simulated platform is built in; real ones
// (an iMessage bridge, an SMS carrier) implement the same methods later.

export interface OutgoingMessage {
  /** The outbox item ID: the platform must not send twice for one key. */
  idempotencyKey: string;
  lineHandle: string;
  /** Chat identifier: a contact's handle, or a group chat's identifier. */
  to: string;
  isGroup: boolean;
  text: string | null;
  attachments: { fileId: string; filename: string; mimeType: string; size: number }[];
  replyToGuid: string | null;
  isAudioMessage: boolean;
}

/** What every outgoing action carries. */
export interface OutgoingAction {
  /** The outbox item ID: the platform must not act twice for one key. */
  idempotencyKey: string;
  lineHandle: string;
  /** Chat identifier: a contact's handle, or a group chat's identifier. */
  to: string;
  isGroup: boolean;
}

export interface OutgoingReaction extends OutgoingAction {
  targetGuid: string;
  type: string;
}

export interface OutgoingTyping extends OutgoingAction {
  isTyping: boolean;
}

export type SendResult =
  | { ok: true; guid: string; sentAt: number }
  | { ok: false; permanent: boolean; reason: string };

export interface Platform {
  readonly name: string;
  sendMessage(message: OutgoingMessage): Promise<SendResult>;
  sendReaction(reaction: OutgoingReaction): Promise<SendResult>;
  sendTyping(typing: OutgoingTyping): Promise<SendResult>;
  sendReceipt(receipt: OutgoingAction): Promise<SendResult>;
}
