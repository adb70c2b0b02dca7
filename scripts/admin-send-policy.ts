// Operator CLI commands of the send policy and pools (docs/operator-cli.md; admin.ts has the rest).
import { parseArgs } from "node:util";

export class UsageError extends Error {}

export const SEND_POLICY_USAGE = `  admin line policy --line ln_... --show | --json '{"contact_first":false,"new_contacts_per_hour":10,...}'
      fields: contact_first, new_contacts_per_hour, new_contacts_per_day (null: no limit),
      quiet_hours {"start":"21:00","end":"08:00","timezone":"America/New_York"} or null, rate_per_second
  admin pool create --account E --name N --lines LINE1,LINE2   (ln_ IDs or handles)
  admin pool add-line --pool pool_... --line LINE
  admin pool remove-line --pool pool_... --line LINE
  admin pool delete --pool pool_...
  admin pool list [--account E] [--json]`;

export const isSendPolicyCommand = (argv: string[]): boolean => (argv[0] === "line" && argv[1] === "policy") || argv[0] === "pool";

function need(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError("--json must be a JSON object, e.g. '{\"new_contacts_per_day\":50}'");
  }
}

export async function runSendPolicyCommand(argv: string[]): Promise<void> {
  // `line policy --json` takes the change; `pool list --json` is the output format.
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      line: { type: "string" },
      json: { type: argv[0] === "pool" ? "boolean" : "string" },
      show: { type: "boolean" },
      account: { type: "string" },
      name: { type: "string" },
      lines: { type: "string" },
      pool: { type: "string" },
    },
  });
  const command = positionals.join(" ");
  const { findLine } = await import("../server/db/line-cache");
  const { findAccountByEmail } = await import("../server/services/accounts/accounts");
  const pools = await import("../server/services/pools/pools");
  const lineId = async (ref: string): Promise<string> => {
    const line = await findLine(ref.trim());
    if (!line) throw new UsageError(`no line ${ref}`);
    return line.id;
  };
  const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));
  switch (command) {
    case "line policy": {
      const { setLinePolicy, SendPolicyInput, linePolicy } = await import("../server/services/lines/set-line-policy");
      const id = await lineId(need(values, "line"));
      if (values.json === undefined) {
        if (!values.show) throw new UsageError("give --show, or --json with the fields to change");
        const line = await findLine(id);
        print(linePolicy(line!));
        return;
      }
      const change = SendPolicyInput.parse(parseJson(String(values.json)));
      print((await setLinePolicy(null, id, change)).policy);
      return;
    }
    case "pool create": {
      const account = await findAccountByEmail(need(values, "account"));
      const refs = need(values, "lines").split(",").map((s) => s.trim()).filter(Boolean);
      const ids = await Promise.all(refs.map(lineId));
      print(await pools.createPool(account.id, { name: need(values, "name"), line_ids: ids }));
      return;
    }
    case "pool add-line":
      print(await pools.addPoolLine(null, need(values, "pool"), await lineId(need(values, "line"))));
      return;
    case "pool remove-line":
      print(await pools.removePoolLine(null, need(values, "pool"), await lineId(need(values, "line"))));
      return;
    case "pool delete":
      print(await pools.deletePool(null, need(values, "pool")));
      return;
    case "pool list": {
      const accountId = values.account ? (await findAccountByEmail(values.account)).id : null;
      const list = await pools.listAccountPools(accountId);
      if (values.json) return print(list);
      console.log(["ID", "NAME", "LINES"].join("\t"));
      for (const p of list) console.log([p.id, p.name, p.line_ids.join(",")].join("\t"));
      return;
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}
