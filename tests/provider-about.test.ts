import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aboutProvider, exampleConfig, PROVIDER_ABOUTS, type ProviderAbout, providerConfigHelp } from "@/server/platform/about";
import { PROVIDER_NAMES, providerFor } from "@/server/platform/registry";
import { TWILIO_ERROR_CODES } from "@/server/platform/twilio";
import { openApiDocument } from "@/server/transports/openapi/openapi";
import { LINE_PROVIDERS } from "@/server/wire/responses";

// Each provider describes itself in plain data (server/platform/<name>/about.ts); the dashboard's
// connect form, the GraphQL and operator CLI help and the wire enum are made from it. These
// tests hold the description to the provider's own settings schema and split, so the form can
// never ask for a field the provider refuses, or show a secret as a setting.

describe("provider descriptions", () => {
  it("describe every provider of the registry, in its order, and name the wire enum", () => {
    expect(PROVIDER_ABOUTS.map((p) => p.name)).toEqual(PROVIDER_NAMES);
    expect([...LINE_PROVIDERS]).toEqual(PROVIDER_NAMES);
    for (const name of PROVIDER_NAMES) {
      const provider = providerFor(name);
      const about = aboutProvider(name)!;
      expect(provider).toMatchObject({ name: about.name, label: about.label, monitored: about.monitored });
      expect(provider.simulator ?? false).toBe(about.simulator ?? false);
    }
  });

  for (const about of PROVIDER_ABOUTS as readonly ProviderAbout[]) {
    it(`${about.name}: the fields are the settings schema's keys, optional where it has a default, secret where split() encrypts`, () => {
      const provider = providerFor(about.name);
      const shape = (provider.configSchema as unknown as z.ZodObject<z.ZodRawShape>).shape;
      expect(about.fields.map((f) => f.key).sort()).toEqual(Object.keys(shape).sort());
      for (const field of about.fields) {
        expect(z.safeParse(shape[field.key]!, undefined).success, `${field.key} optional`).toBe(field.optional === true);
      }
      // Every example value is valid, and the required ones alone make a valid config.
      const full = provider.configSchema.parse(Object.fromEntries(about.fields.map((f) => [f.key, f.example])));
      provider.configSchema.parse(exampleConfig(about));
      const { settings, secrets } = provider.split(full);
      const secret = about.fields.filter((f) => f.secret).map((f) => f.key).sort();
      expect(Object.keys(secrets ?? {}).sort()).toEqual(secret);
      for (const key of secret) expect(Object.keys(settings as object)).not.toContain(key);
      // What the owner is shown carries no secret.
      const shown = JSON.stringify(provider.describe(provider.load(settings, secrets).settings));
      for (const field of about.fields.filter((f) => f.secret)) expect(shown).not.toContain(String(field.example));
    });
  }

  it("make the help text the GraphQL schema and the operator CLI show", () => {
    expect(providerConfigHelp()).toBe(
      "simulated: {} or omitted; bluebubbles: { url, password, sendTimeoutSeconds? }; twilio: { accountSid, authToken, messagingServiceSid?, baseUrl?, sendTimeoutSeconds? }; sms-gateway: { url, username?, password, signingKey, timeoutSeconds? }",
    );
  });

  it("give the API reference each provider's refusals, with the codes mapped by number as a table", () => {
    const doc = openApiDocument();
    const text = doc.info.description;
    for (const about of PROVIDER_ABOUTS as readonly ProviderAbout[]) {
      if (about.monitored) expect(text, about.name).toContain(`${about.label}: ${about.errors!.summary}`);
    }
    expect(doc["x-provider-error-codes"]).toEqual({ twilio: TWILIO_ERROR_CODES });
    expect(text).toContain("| 21610 | fails the item | the recipient replied STOP to this sender (unsubscribed); they must reply START first |");
    expect(text).toContain("| 20003 | line waits |");
    expect(text).toContain("| 20429 | retried |");
  });
});
