import * as R from "../../wire/responses";
import { LINE_ERRORS, operation } from "../operation";
import { ListLinesQuery } from "../schemas/v1";
import { listPools } from "../pools/pools";
import { CapacityQuery, getCapacity } from "./capacity";
import { listLines } from "./lines";
import { activateSandbox, getSandbox } from "./sandbox";

export const LINE_OPERATIONS = {
  listLines: operation({
    method: "GET",
    path: "/v1/lines",
    tag: "Lines",
    summary: "List lines",
    description: "The lines this key can use: its account's, and the sandbox line for accounts with an owner. Oldest first.",
    scope: "lines:read",
    query: ListLinesQuery,
    response: R.page(R.LineSchema, "Line"),
    errors: ["invalid_parameter_value"],
    // Never cached: a line created or changed by another process (the operator CLI, another
    // instance) must show at once, and the read cache hears only this process's writes.
    handler: ({ actor, query }) => listLines(actor, query),
  }),
  getCapacity: operation({
    method: "GET",
    path: "/v1/capacity",
    tag: "Lines",
    summary: "What a line or pool can still send (extension)",
    description:
      "Per line: status, the new-contact budgets (used, limit, remaining, resets_at, per sliding hour and day), quiet hours, the held sends by reason, and when a new-contact send could next go out.",
    scope: "lines:read",
    query: CapacityQuery,
    response: R.CapacitySchema,
    errors: [...LINE_ERRORS, "pool_not_found"],
    example: { from: "+15550001000" },
    handler: ({ actor, query }) => getCapacity(actor, query),
  }),
  listPools: operation({
    method: "GET",
    path: "/v1/pools",
    tag: "Lines",
    summary: "List sender pools (extension)",
    description:
      "A pool is a named set of lines; its pool_ ID is a `from` of POST /v1/messages, which then sends from the line that already talks with the contact, otherwise from the connected line with the most new-contact capacity left.",
    scope: "lines:read",
    response: R.page(R.PoolSchema, "Pool"),
    errors: [],
    handler: ({ actor }) => listPools(actor),
  }),
  getSandbox: operation({
    method: "GET",
    path: "/v1/sandbox",
    tag: "Sandbox",
    summary: "Sandbox state",
    response: R.SandboxSchema,
    errors: ["sandbox_requires_owner"],
    handler: ({ actor }) => getSandbox(actor),
  }),
  activateSandbox: operation({
    method: "POST",
    path: "/v1/sandbox",
    tag: "Sandbox",
    summary: "Start sandbox activation",
    description: "Issues the activation code to text to the sandbox line from your phone (idempotent while pending or active).",
    response: R.SandboxSchema,
    errors: ["sandbox_requires_owner"],
    handler: ({ actor }) => activateSandbox(actor),
  }),
};
