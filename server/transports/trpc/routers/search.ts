import { z } from "zod";
import { PageQuery } from "../../../wire/pagination";
import { SearchText, searchMessages } from "../../../services/messaging/search";
import { protectedProcedure, router } from "../init";

// Full-text search for the dashboard: the same service as GET /v1/messages?query=.
export const searchRouter = router({
  /** Messages matching `query`, newest first: of every line, one line (its handle) or one chat (cht_ ID). */
  messages: protectedProcedure
    .input(
      PageQuery.extend({
        query: SearchText,
        line: z.string().trim().min(1).max(320).optional(),
        chat_id: z.string().trim().min(1).max(100).optional(),
      }),
    )
    .query(({ ctx, input }) =>
      searchMessages(ctx.actor, { query: input.query, line: input.line, chat: input.chat_id, limit: input.limit, cursor: input.cursor }),
    ),
});
