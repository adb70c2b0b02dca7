import { z } from "zod";
import { PageQuery } from "../http/pagination";
import { OUTBOX_STATUSES } from "../services/outbox";

// One zod schema per /v1 read operation, shared by REST parsing and (later) GraphQL, tRPC and
// the OpenAPI document.

const handle = z.string().trim().min(1, "must not be empty").max(320);

export const ListLinesQuery = PageQuery;
export const ListChatsQuery = PageQuery.extend({ from: handle });
export const ListMessagesQuery = PageQuery.extend({
  /** Fetch one message by msg_ ID or GUID instead of listing. */
  id: z.string().trim().min(1).max(200).optional(),
  from: handle.optional(),
  to: handle.optional(),
});
export const ListReactionsQuery = PageQuery.extend({ message_id: z.string().trim().min(1).max(200) });
export const ChatStateQuery = PageQuery.extend({ from: handle, to: handle });
export const OutboxQuery = PageQuery.extend({
  id: z.string().trim().min(1).max(100).optional(),
  from: handle.optional(),
  status: z.enum(OUTBOX_STATUSES).optional(),
});

/** GET /v1/files?id= */
export const FileQuery = z.object({ id: z.string().trim().min(1).max(100) });
