import { blueBubblesProvider } from "./bluebubbles";
import type { AnyProvider } from "./provider";
import { simulatedProvider } from "./simulated";
import { smsGatewayProvider } from "./sms-gateway";
import { twilioProvider } from "./twilio";

// A new provider is one folder under server/platform and one line here.

const PROVIDERS: readonly AnyProvider[] = [simulatedProvider, blueBubblesProvider, twilioProvider, smsGatewayProvider];

export const PROVIDER_NAMES = PROVIDERS.map((p) => p.name) as [string, ...string[]];

export const DEFAULT_PROVIDER = simulatedProvider.name;

export const MONITORED_PROVIDERS = PROVIDERS.filter((p) => p.monitored).map((p) => p.name);

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
