import type { z } from "zod";
import type {
  serializeChat,
  serializeLine,
  serializeMessage,
  serializeOutboxItem,
  serializeReaction,
  serializeReceipt,
  serializeTyping,
  serializeWebhook,
} from "./serializers";
import type { serializeFile } from "../services/messaging/files";
import type { getSandbox } from "../services/lines/sandbox";
import type { serializeDelivery } from "../services/webhooks/webhook-deliveries";
import type { deleteWebhook } from "../services/webhooks/webhooks";
import type { enqueue } from "../services/messaging/send";
import type * as R from "./responses";

// Compile-time only: each response schema must describe exactly what its serializer returns
// (tsc fails here otherwise). Free-form JSON fields (payload, data) are left out.

/** Each assignable to the other (and the same keys). */
type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? ([keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false) : false) : false;
type Expect<T extends true> = T;
type Out<S extends z.ZodType> = z.output<S>;

export type Checks = [
  Expect<Equal<Out<typeof R.LineSchema>, ReturnType<typeof serializeLine>>>,
  Expect<Equal<Out<typeof R.ChatSchema>, ReturnType<typeof serializeChat>>>,
  Expect<Equal<Out<typeof R.MessageSchema>, ReturnType<typeof serializeMessage>>>,
  Expect<Equal<Out<typeof R.ReactionSchema>, ReturnType<typeof serializeReaction>>>,
  Expect<Equal<Out<typeof R.TypingIndicatorSchema>, ReturnType<typeof serializeTyping>>>,
  Expect<Equal<Out<typeof R.ReadReceiptSchema>, ReturnType<typeof serializeReceipt>>>,
  Expect<Equal<Omit<Out<typeof R.OutboxItemSchema>, "payload">, Omit<ReturnType<typeof serializeOutboxItem>, "payload">>>,
  Expect<Equal<Out<typeof R.AcceptedSchema>, Awaited<ReturnType<typeof enqueue>>>>,
  Expect<Equal<Out<typeof R.FileSchema>, ReturnType<typeof serializeFile>>>,
  Expect<Equal<Omit<Out<typeof R.SandboxSchema>, "status">, Omit<Awaited<ReturnType<typeof getSandbox>>, "status">>>,
  Expect<Equal<Out<typeof R.SandboxSchema>["status"], Awaited<ReturnType<typeof getSandbox>>["status"]>>,
  Expect<Equal<Out<typeof R.WebhookSchema>, ReturnType<typeof serializeWebhook>>>,
  Expect<Equal<Omit<Out<typeof R.WebhookDeliverySchema>, "data">, Omit<ReturnType<typeof serializeDelivery>, "data">>>,
  Expect<Equal<Out<typeof R.DeletedSchema>, Awaited<ReturnType<typeof deleteWebhook>>>>,
];
