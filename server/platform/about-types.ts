// The dashboard's connect form, the help texts and the wire enum of providers are made from this
// data. Imports nothing: a page's client code may use it.

export interface ConnectionField {
  key: string;
  label: string;
  type: "url" | "text" | "number" | "password";
  placeholder: string;
  /** For help texts and tests: never a real secret. */
  example: string | number;
  /** Stored encrypted and never returned: typed again to change any setting. */
  secret?: boolean;
  optional?: boolean;
  min?: number;
  max?: number;
  width?: number;
}

export interface ProviderErrorCode {
  code: number;
  /** fail: the item fails at once. retry: backed off and retried. wait: the line is unreachable until its settings are fixed. */
  action: "fail" | "retry" | "wait";
  reason: string;
}

export interface ProviderAbout {
  name: string;
  label: string;
  short: string;
  /** Lines outside this process: probed, caught up after downtime, with a health, and webhooks that must reach PUBLIC_URL. */
  monitored: boolean;
  simulator?: boolean;
  fields: readonly ConnectionField[];
  /** For the API reference: a paragraph, and the codes it maps by number. */
  errors?: { summary: string; codes?: readonly ProviderErrorCode[] };
  /** Shown above a failed test's reason: the first whose `when` (plain substrings) is in it. */
  fixes?: readonly { when: readonly string[]; say: string }[];
  handle?: { label: string; placeholder: string; help: string };
}
