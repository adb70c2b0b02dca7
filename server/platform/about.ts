import type { ConnectionField, ProviderAbout } from "./about-types";
import { blueBubblesAbout } from "./bluebubbles/about";
import { simulatedAbout } from "./simulated/about";
import { smsGatewayAbout } from "./sms-gateway/about";
import { twilioAbout } from "./twilio/about";

// Plain data: the dashboard's client code, the wire schemas and the CLIs read it without loading any provider.

export type { ConnectionField, ProviderAbout };

export const PROVIDER_ABOUTS = [simulatedAbout, blueBubblesAbout, twilioAbout, smsGatewayAbout] as const satisfies readonly ProviderAbout[];

export type ProviderName = (typeof PROVIDER_ABOUTS)[number]["name"];

export const PROVIDER_NAME_LIST = PROVIDER_ABOUTS.map((p) => p.name) as [ProviderName, ...ProviderName[]];

export function aboutProvider(name: string): ProviderAbout | null {
  return (PROVIDER_ABOUTS as readonly ProviderAbout[]).find((p) => p.name === name) ?? null;
}

function fieldsHelp(about: ProviderAbout): string {
  return `{ ${about.fields.map((f) => `${f.key}${f.optional ? "?" : ""}`).join(", ")} }`;
}

export function providerConfigHelp(): string {
  return (PROVIDER_ABOUTS as readonly ProviderAbout[]).map((p) => `${p.name}: ${p.fields.length ? fieldsHelp(p) : "{} or omitted"}`).join("; ");
}

export function exampleConfig(about: ProviderAbout): Record<string, string | number> {
  return Object.fromEntries(about.fields.filter((f) => !f.optional).map((f) => [f.key, f.example]));
}

export function explainProblem(provider: string, reason: string | null | undefined): string | null {
  if (!reason) return null;
  const fix = aboutProvider(provider)?.fixes?.find((f) => f.when.some((w) => reason.includes(w)));
  return fix?.say ?? null;
}
