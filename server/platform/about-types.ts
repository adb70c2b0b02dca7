// What a provider says of itself, as plain data (server/platform/<name>/about.ts): its name and
// labels, its flags, and the connection settings an owner or operator gives it. The dashboard's
// connect form, the GraphQL and CLI help texts and the wire enum of providers are made from it.
// Imports nothing: a page's client code may use it.

export interface ConnectionField {
  /** The key in --provider-config / provider_config. */
  key: string;
  label: string;
  /** How the form asks for it. */
  type: "url" | "text" | "number" | "password";
  /** What the form shows empty. */
  placeholder: string;
  /** A valid value, for help texts and tests (never a real secret). */
  example: string | number;
  /** Stored encrypted and never returned: typed again to change any setting. */
  secret?: boolean;
  /** May be left out (the provider has a default). */
  optional?: boolean;
  min?: number;
  max?: number;
  /** The form's input width in pixels (a hint). */
  width?: number;
}

/** One provider error code as this service treats it on a send. */
export interface ProviderErrorCode {
  code: number;
  /** fail: the item fails at once. retry: backed off and retried. wait: the line is unreachable until its settings are fixed. */
  action: "fail" | "retry" | "wait";
  /** What it means, as an item's error and the dashboard say it. */
  reason: string;
}

export interface ProviderAbout {
  name: string;
  /** The dashboard's name for it. */
  label: string;
  /** A short name for tables. */
  short: string;
  /**
   * Whether its lines live on a device or service outside this process: probed, caught up after
   * downtime, with a health (connected, degraded, disconnected), and with webhooks that must
   * reach PUBLIC_URL. The built-in simulated platform is not.
   */
  monitored: boolean;
  /** The built-in other phone: the simulator endpoints play the contacts of its lines. */
  simulator?: boolean;
  fields: readonly ConnectionField[];
  /** How its refusals reach a send, for the API reference: a paragraph, and the codes it maps by number. */
  errors?: { summary: string; codes?: readonly ProviderErrorCode[] };
  /**
   * What a failed connection test means and how to fix it, in the owner's words: the first whose
   * `when` is found in the test's reason (plain substrings, no patterns) is shown above the reason.
   */
  fixes?: readonly { when: readonly string[]; say: string }[];
  /** What a line's handle is on this provider, for the "Add a line" form. */
  handle?: { label: string; placeholder: string; help: string };
}
