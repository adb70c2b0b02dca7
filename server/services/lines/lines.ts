import { randomInt } from "node:crypto";
import { z } from "zod";
import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import type { Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { keysetAsc, type Page, toPage } from "../../wire/pagination";
import { newId } from "../../kernel/ids";
import { findLine, forgetCachedLines } from "../../db/line-cache";
import { serializeLine } from "../../wire/serializers";
import { notifyChange } from "../../cache/changes";
import { requireSandboxOwner, sandboxStatus } from "./sandbox-state";
import { linesForActor } from "./tenancy";

/** Throws unless the caller may use this line (which must be its own or the sandbox). */
export async function assertLineAccess(actor: Actor, line: Pick<Line, "id" | "isSandbox">): Promise<void> {
  if (line.isSandbox) {
    requireSandboxOwner(actor);
    if ((await sandboxStatus(actor.accountId)) !== "active") {
      throw new ApiError(
        "sandbox_not_activated",
        "The sandbox is not activated. POST /v1/sandbox for an activation code and text it to the sandbox number from your phone.",
      );
    }
    return;
  }
  if (actor.lineIds && !actor.lineIds.has(line.id)) {
    throw new ApiError("line_not_accessible", "This API key is restricted to other lines.");
  }
}
export { findLine, forgetCachedLines } from "../../db/line-cache";

export async function resolveLine(actor: Actor, ref: string, param = "from"): Promise<Line> {
  const value = ref.trim();
  const line = await findLine(value);
  if (!line || (!line.isSandbox && line.accountId !== actor.accountId)) {
    throw new ApiError("line_not_found", `No line with handle '${value}'.`, { param });
  }
  await assertLineAccess(actor, line);
  return line;
}

export async function assertLineIdAccess(actor: Actor, lineId: string): Promise<Line> {
  const line = await findLine(lineId);
  if (!line) throw new Error(`line ${lineId} vanished`);
  await assertLineAccess(actor, line);
  return line;
}

export async function listLines(actor: Actor, input: { limit: number; cursor?: string }): Promise<Page<ReturnType<typeof serializeLine>>> {
  const db = await getDb();
  const page = keysetAsc(input.cursor);
  const rows = await db.line.findMany({
    where: { ...page.where, ...(await linesForActor(actor)) },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeLine, (l) => [l.id]);
}

export interface CreateLineInput {
  accountId: string;
  handle: string;
  label?: string | null;
  service?: "imessage" | "sms" | "auto";
  advancedFeatures?: boolean;
}

export async function createLine(input: CreateLineInput): Promise<Line> {
  const db = await getDb();
  const handle = normalizeHandle(input.handle);
  if (handle === normalizeHandle(config().SANDBOX_LINE_HANDLE)) {
    throw new ApiError("invalid_parameter_value", `${handle} is the sandbox line's handle.`, { param: "handle" });
  }
  const max = config().MAX_LINES_PER_ACCOUNT;
  if ((await db.line.count({ where: { accountId: input.accountId } })) >= max) {
    throw new ApiError("line_limit_reached", `This account already has ${max} lines, the most one account may have (MAX_LINES_PER_ACCOUNT).`);
  }
  const taken = await db.line.findUnique({ where: { handle }, select: { id: true } });
  if (taken) throw new ApiError("invalid_parameter_value", `A line with handle ${handle} already exists.`, { param: "handle" });
  const line = await db.line.create({
    data: {
      id: newId("line"),
      accountId: input.accountId,
      handle,
      label: input.label ?? null,
      service: input.service ?? "imessage",
      advancedFeatures: input.advancedFeatures ?? false,
    },
  });
  await notifyChange(input.accountId);
  return line;
}

export const CreateSimulatedLineBody = z.object({
  label: z.string().trim().max(100).nullable().optional(),
  service: z.enum(["imessage", "sms", "auto"]).default("imessage"),
  advanced_features: z.boolean().default(false),
  /** A real number or Apple ID becomes a line's handle only by the operator (CLI), so no account can claim one it does
   * not hold and lock its owner out. */
  handle: z.string().trim().min(4).max(320).optional(),
});

export function isSimulatedNumber(handle: string): boolean {
  return /^\+155501\d{5}$/.test(normalizeHandle(handle));
}

export const UpdateLineBody = z.object({
  id: z.string().trim().min(1).max(100),
  label: z.string().trim().max(100).nullable().optional(),
  is_active: z.boolean().optional(),
});

async function freeSimulatedHandle(): Promise<string> {
  const db = await getDb();
  for (let i = 0; i < 20; i++) {
    const handle = `+155501${String(randomInt(0, 100_000)).padStart(5, "0")}`;
    if (!(await db.line.findUnique({ where: { handle }, select: { id: true } }))) return handle;
  }
  throw new ApiError("internal_error", "No free simulated handle was found; pass one.");
}

export async function createSimulatedLine(actor: Actor, input: z.output<typeof CreateSimulatedLineBody>) {
  if (input.handle !== undefined && !isSimulatedNumber(input.handle)) {
    throw new ApiError(
      "invalid_parameter_value",
      "A line created here gets a simulated number (+1 555 01xx xxxx). A real number or Apple ID becomes a line's handle only through the operator (admin line create), so nobody can claim one they do not hold.",
      { param: "handle" },
    );
  }
  const line = await createLine({
    accountId: actor.accountId,
    handle: input.handle ?? (await freeSimulatedHandle()),
    label: input.label || null,
    service: input.service,
    advancedFeatures: input.advanced_features,
  });
  return serializeLine(line);
}

export async function updateLine(actor: Actor, input: z.output<typeof UpdateLineBody>) {
  const db = await getDb();
  const line = await db.line.findFirst({ where: { id: input.id, accountId: actor.accountId } });
  if (!line) throw new ApiError("line_not_found", `No line with ID '${input.id}'.`, { param: "id" });
  const updated = await db.line.update({
    where: { id: line.id },
    data: {
      ...(input.label !== undefined ? { label: input.label || null } : {}),
      ...(input.is_active !== undefined ? { isActive: input.is_active } : {}),
    },
  });
  forgetCachedLines();
  await notifyChange(actor.accountId);
  return serializeLine(updated);
}
