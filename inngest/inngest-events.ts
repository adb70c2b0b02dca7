import { eventType } from "inngest";
import { z } from "zod";

/** Sent when an outbox item is stored (and by the sweep for items whose event was lost). */
export const outboxItemCreated = eventType("relay/outbox.item.created", {
  schema: z.object({ id: z.string().startsWith("obx_"), line_id: z.string() }),
});

/** Sent when a change with webhook deliveries commits: due deliveries should be sent. */
export const webhooksDue = eventType("relay/webhooks.due", { schema: z.object({}) });
