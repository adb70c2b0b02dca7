import type { ProviderAbout } from "../about-types";

export const simulatedAbout = {
  name: "simulated",
  label: "Simulated",
  short: "Simulated",
  monitored: false,
  simulator: true,
  fields: [],
} as const satisfies ProviderAbout;
