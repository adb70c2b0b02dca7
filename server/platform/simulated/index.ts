import { z } from "zod";
import { defineProvider } from "../provider";
import { simulatedPlatform } from "./platform";

// The built-in other phone: no settings, always connected, every advanced feature.

const Config = z.object({}).strict();

export const simulatedProvider = defineProvider({
  name: "simulated",
  label: "Simulated",
  configSchema: Config,
  split: () => ({ settings: {}, secrets: null }),
  load: () => ({ settings: {}, secrets: null }),
  describe: () => ({}),
  platform: () => simulatedPlatform,
  idempotentSends: true,
  monitored: false,
  simulator: true,
  probe: async (line) => ({ ok: true, reason: null, capabilities: { simulated: true }, advancedFeatures: line.advancedFeatures }),
});
