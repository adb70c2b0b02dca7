import { cron, type Inngest } from "inngest";
import { probeDueLines, sweepProviderEvents } from "@/server/services/line-monitor";
import { inngest } from "../client";

// Every minute: probes the provider lines due for it (capabilities and health; a line that
// answers again after being disconnected is caught up), with the same steps as the embedded
// engine's line monitor, and provider event keys past their retention are forgotten. Each line is probed by one run only: the probe time is claimed in the
// database first.

export function createProbeLines(client: Inngest.Any) {
  return client.createFunction(
    { id: "probe-lines", name: "Probe provider lines and catch up", triggers: [cron("* * * * *")], concurrency: [{ limit: 1 }], retries: 1 },
    async ({ step }) => ({
      probed: await step.run("probe-due-lines", () => probeDueLines()),
      forgotten: await step.run("sweep-provider-events", () => sweepProviderEvents()),
    }),
  );
}

export const probeLines = createProbeLines(inngest);
