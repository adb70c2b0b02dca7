import { z } from "zod";
import { PageQuery } from "../../wire/pagination";
import { OUTBOX_STATUSES } from "../messaging/outbox";
import { SearchText } from "../messaging/search";

const handle = z.string().trim().min(1, "must not be empty").max(320);

export const ListLinesQuery = PageQuery;
const line = handle.describe("The line: its handle or ln_ ID");
const contact = handle.describe("A phone number, platform account ID or cht_ chat ID");
export const ListChatsQuery = PageQuery.extend({ from: line });
export const ListMessagesQuery = PageQuery.extend({
  id: z.string().trim().min(1).max(200).optional().describe("One message by msg_ ID or GUID (instead of a page)"),
  from: line.optional(),
  to: contact.optional().describe("Only this chat"),
  query: SearchText.optional().describe(
    "Extension: only messages whose text matches, newest first and paged as without it. Whole words, all of them (any language, no stemming); \"a phrase\" in order, -word to exclude, `or` between alternatives. 1 to 200 characters after trimming.",
  ),
});
/** GraphQL searchMessages: GET /v1/messages?query= with `from` optional (every line the caller may read). */
export const SearchMessagesQuery = PageQuery.extend({ query: SearchText, from: line.optional(), to: contact.optional().describe("Only this chat") });
export const ListReactionsQuery = PageQuery.extend({ message_id: z.string().trim().min(1).max(200) });
export const ChatStateQuery = PageQuery.extend({ from: line, to: contact });
export const OutboxQuery = PageQuery.extend({
  id: z.string().trim().min(1).max(100).optional().describe("One item by obx_ ID (instead of a page)"),
  from: line.optional(),
  status: z.enum(OUTBOX_STATUSES).optional(),
  hold_reason: z
    .enum(["scheduled", "quiet_hours", "new_contact_budget", "approval"])
    .optional()
    .describe("Extension. Only pending items held for this reason (approval: the sends waiting for the owner)"),
});

export const OutboxIdQuery = z.object({ id: z.string().trim().min(1, "must not be empty").max(100).describe("The obx_ ID") });

export const ChatIdQuery = z.object({ id: z.string().trim().min(1, "must not be empty").max(100).describe("The cht_ ID") });

export const FileQuery = z.object({ id: z.string().trim().min(1).max(100) });
