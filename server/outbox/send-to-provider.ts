import { sql } from "../db";
import type { Line } from "../generated/prisma/client";
import { CredentialsError } from "../db/credentials";
import { platformForLine } from "../platform/connection";
import { findProvider } from "../platform/registry";
import type { OutgoingMessage, Platform, SendResult } from "../platform/types";
import type { Prepared } from "./prepare";
import { sendService } from "../policy/sms-fallback";

// Never inside a database transaction.

function outgoingMessage(x: Extract<Prepared, { kind: "message" }>): OutgoingMessage {
  const service = sendService(x.item, x.line, x.p);
  return {
    ...common(x),
    text: x.p.text,
    attachments: x.files.map((f) => ({ fileId: f.id, filename: f.filename, mimeType: f.mimeType, size: f.size, storageKey: f.storageKey })),
    replyToGuid: x.p.reply_to_guid,
    isAudioMessage: x.p.is_audio_message,
    ...(service ? { service } : {}),
  };
}

function common(x: Prepared) {
  return { idempotencyKey: x.item.id, lineHandle: x.line.handle, to: x.p.to, isGroup: x.p.is_group, providerChatId: x.providerChatId };
}

export async function sendToProvider(x: Prepared): Promise<SendResult> {
  let platform: Platform;
  try {
    platform = platformForLine(x.line);
  } catch (err) {
    if (err instanceof CredentialsError) return { ok: false, permanent: false, reason: err.message, unreachable: true };
    throw err;
  }
  switch (x.kind) {
    case "message": {
      const optedOut = await optedOutAt(x.line, x.p.to);
      if (optedOut) {
        return { ok: false, permanent: true, reason: `${x.p.to} opted out of messages from ${x.line.handle} (replied STOP on ${optedOut.toISOString()}); they must reply START before this line can message them again` };
      }
      const message = outgoingMessage(x);
      if (x.item.unknownSince && platform.reconcile) {
        // An earlier attempt may have sent it: only a proven miss is sent again.
        const since = new Date(x.item.unknownSince.getTime() - RECONCILE_SLACK_MS);
        const known = await sql<{ guid: string }>(`SELECT guid FROM "Message" WHERE "chatId" = $1 AND "sentAt" >= $2`, [x.p.chat_id, since]);
        const found = await platform.reconcile(message, since.getTime(), new Set(known.map((k) => k.guid)));
        if (found.found === true) return { ok: true, guid: found.guid, sentAt: found.sentAt, service: found.service, providerChatId: found.providerChatId };
        if (found.found === null) return { ok: false, permanent: false, unknown: true, unreachable: found.unreachable, reason: found.reason };
        if (found.sentParts?.length) return platform.sendMessage(message, { sentParts: found.sentParts });
      }
      return platform.sendMessage(message);
    }
    case "reaction":
      return platform.sendReaction({ ...common(x), targetGuid: x.p.message_guid, type: x.p.type, added: x.p.added });
    case "typing":
      return platform.sendTyping({ ...common(x), isTyping: x.p.is_typing });
    case "receipt":
      return platform.sendReceipt(common(x));
  }
}

async function optedOutAt(line: Line, to: string): Promise<Date | null> {
  if (!findProvider(line.provider)?.service) return null; // only SMS providers carry opt-outs
  const rows = await sql<{ optedOutAt: Date }>(`SELECT "optedOutAt" FROM "OptOut" WHERE "lineId" = $1 AND handle = $2`, [line.id, to]);
  return rows[0]?.optedOutAt ?? null;
}

// Clock difference allowed between this server and a provider's host.
const RECONCILE_SLACK_MS = 5_000;
