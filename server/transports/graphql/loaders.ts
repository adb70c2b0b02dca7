import DataLoader from "dataloader";
import type { Actor } from "../../services/access/actor";
import type { Message, Prisma, PrismaClient } from "../../generated/prisma/client";
import { whereForActor } from "../../services/lines/tenancy";

// Per-request batch loaders for links with no Prisma relation (a reply's parent by GUID, the
// message an outbox item sent). `query` is Pothos's selection beneath the field, so what is
// nested comes in the same query; loads with different selections are batched apart.

type MessageQuery = Pick<Prisma.MessageFindManyArgs, "include" | "select">;

export interface Loaders {
  /** The caller's messages by `${chatId} ${guid}` (a GUID is unique per line, not per account). */
  messageInChatByGuid(query: MessageQuery): DataLoader<string, Message | null>;
  /** The caller's messages by the outbox item that sent them. */
  messageByOutboxId(query: MessageQuery): DataLoader<string, Message | null>;
}

export function createLoaders(actor: Actor, prisma: PrismaClient): Loaders {
  const loaders = new Map<string, DataLoader<string, Message | null>>();
  const messagesBy = (key: "outboxId") => (query: MessageQuery) => {
    const name = `${key} ${JSON.stringify(query)}`;
    let loader = loaders.get(name);
    if (!loader) {
      loader = new DataLoader(
        async (values: readonly string[]) => {
          const rows = await prisma.message.findMany({
            ...query,
            where: { ...(await whereForActor(actor)), [key]: { in: [...values] } },
          });
          const byKey = new Map(rows.map((m) => [m[key], m]));
          return values.map((v) => byKey.get(v) ?? null);
        },
        // Batching only: a subscription's context lives on, and an item's message appears once it is sent.
        { cache: false },
      );
      loaders.set(name, loader);
    }
    return loader;
  };
  const inChatByGuid = (query: MessageQuery) => {
    const name = `chat-guid ${JSON.stringify(query)}`;
    let loader = loaders.get(name);
    if (!loader) {
      loader = new DataLoader(
        async (keys: readonly string[]) => {
          const pairs = keys.map((k) => {
            const at = k.indexOf(" "); // chat IDs have no spaces; GUIDs may
            return { chatId: k.slice(0, at), guid: k.slice(at + 1) };
          });
          const rows = await prisma.message.findMany({ ...query, where: { ...(await whereForActor(actor)), OR: pairs } });
          const byKey = new Map(rows.map((m) => [`${m.chatId} ${m.guid}`, m]));
          return keys.map((k) => byKey.get(k) ?? null);
        },
        { cache: false },
      );
      loaders.set(name, loader);
    }
    return loader;
  };
  return { messageInChatByGuid: inChatByGuid, messageByOutboxId: messagesBy("outboxId") };
}
