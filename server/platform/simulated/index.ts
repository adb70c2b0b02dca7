import { z } from "zod";
import { defineProvider } from "../provider";
import { simulatedAbout } from "./about";
import { simulatedPlatform } from "./platform";

const Config = z.object({}).strict();

export const simulatedProvider = defineProvider({
  name: simulatedAbout.name,
  label: simulatedAbout.label,
  configSchema: Config,
  split: () => ({ settings: {}, secrets: null }),
  load: () => ({ settings: {}, secrets: null }),
  describe: () => ({}),
  platform: () => simulatedPlatform,
  idempotentSends: true,
  monitored: simulatedAbout.monitored,
  simulator: simulatedAbout.simulator,
  probe: async (line) => ({ ok: true, reason: null, capabilities: { simulated: true }, advancedFeatures: line.advancedFeatures }),
});
