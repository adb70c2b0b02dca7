import { z } from "zod";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import { aboutProvider } from "../../platform/about";
import { findProvider, PROVIDER_NAMES } from "../../platform/registry";
import type { ProbeResult } from "../../platform/types";
import { connectLine, describeLine, testUnsaved, validateSettings } from "./line-connections";
import { createLine, forgetCachedLines } from "./lines";

export const AddLineBody = z.object({
  provider: z.enum(PROVIDER_NAMES),
  provider_config: z.record(z.string(), z.unknown()).default({}),
  handle: z.string().trim().max(320).optional(),
  label: z.string().trim().max(100).nullable().optional(),
  save_failing: z.boolean().optional(),
});

export interface AddLineReport {
  saved: boolean;
  line: ReturnType<typeof describeLine> | null;
  probe: ProbeResult;
  warnings: string[];
  /** The handle the line has (or would have): the provider's when it names one, else the owner's. */
  handle: string | null;
}

export async function addLine(accountId: string, input: z.input<typeof AddLineBody>): Promise<AddLineReport> {
  const body = AddLineBody.parse(input);
  const provider = findProvider(body.provider)!;
  if (!provider.monitored) {
    throw invalidParam("provider", `${provider.label} lines are created with "Create a simulated line"; choose a provider here.`);
  }
  await validateSettings(provider, body.provider_config);
  const typed = body.handle ? normalizeHandle(body.handle) : null;
  if (body.handle && !typed) throw invalidParam("handle", "Enter a phone number in E.164 form (+15551234567) or an Apple ID email.");
  const service = provider.service ?? "imessage";
  const probe = await testUnsaved(provider, body.provider_config, { id: "ln_unsaved", handle: typed ?? "", service, advancedFeatures: false });
  const named = probe.ok && probe.handle ? normalizeHandle(probe.handle) : null;
  const handle = named ?? typed;
  const warnings = named && typed && named !== typed ? [`The provider is signed in as ${named}, not ${typed}: the line takes ${named}.`] : [];
  if (!probe.ok && !body.save_failing) return { saved: false, line: null, probe, warnings, handle };
  if (!handle) {
    const what = aboutProvider(provider.name)?.handle?.label ?? "handle";
    throw new ApiError("missing_required_parameter", `${provider.label} does not name this line's ${what.toLowerCase()}: enter it.`, { param: "handle" });
  }
  const line = await createLine({ accountId, handle, label: body.label ?? null, service, advancedFeatures: false });
  try {
    const report = await connectLine(accountId, { line_id: line.id, provider: provider.name, provider_config: body.provider_config });
    return { ...report, warnings: [...warnings, ...report.warnings], handle: report.line.handle };
  } catch (err) {
    // Connecting validated nothing new; if it still failed, the line it was for goes too.
    await (await getDb()).line.delete({ where: { id: line.id } }).catch(() => undefined);
    forgetCachedLines();
    throw err;
  }
}
