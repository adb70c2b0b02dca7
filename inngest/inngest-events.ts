import { eventType } from "inngest";
import { z } from "zod";

export const outboxItemCreated = eventType("relay/outbox.item.created", {
  schema: z.object({ id: z.string().startsWith("obx_"), line_id: z.string() }),
});

export const webhooksDue = eventType("relay/webhooks.due", { schema: z.object({}) });
