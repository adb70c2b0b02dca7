import { blueBubblesProvider } from "./bluebubbles";
import type { AnyProvider } from "./provider";
import { simulatedProvider } from "./simulated";
import { smsGatewayProvider } from "./sms-gateway";
import { twilioProvider } from "./twilio";

// Provider name -> its definition. A new provider is one folder under server/platform and one
// line here.

const PROVIDERS: readonly AnyProvider[] = [simulatedProvider, blueBubblesProvider, twilioProvider, smsGatewayProvider];

export const PROVIDER_NAMES = PROVIDERS.map((p) => p.name) as [string, ...string[]];

/** What a line is on until it is connected elsewhere: the built-in simulated platform. */
export const DEFAULT_PROVIDER = simulatedProvider.name;

/** Providers whose lines are probed and caught up (for SQL filters). */
export const MONITORED_PROVIDERS = PROVIDERS.filter((p) => p.monitored).map((p) => p.name);

/** Whether lines of this provider are probed, caught up and have a health (false for an unknown name). */
export function isMonitored(name: string): boolean {
  return findProvider(name)?.monitored === true;
}

export function findProvider(name: string): AnyProvider | null {
  return PROVIDERS.find((p) => p.name === name) ?? null;
}

export function providerFor(name: string): AnyProvider {
  const provider = findProvider(name);
  if (!provider) throw new Error(`no provider named ${name}`);
  return provider;
}
