import { FORBIDDEN_PROVIDER_DESTINATION, type ProviderFailureKind, truncate } from "../http";

/** "http" includes a plain-text error (Koa's "Not Found"); "garbage" includes a 2xx whose envelope says status >= 400. */
export type BBErrorKind =
  | ProviderFailureKind
  | "too_large";

export interface BlueBubblesErrorInit {
  kind: BBErrorKind;
  message: string;
  operation: string;
  status?: number | null;
  errorType?: string | null;
  errorMessage?: string | null;
  envelopeMessage?: string | null;
  dataError?: number | null;
  data?: unknown;
  sentRequest: boolean;
  code?: string | null;
}

export class BlueBubblesError extends Error {
  override name = "BlueBubblesError";
  kind: BBErrorKind;
  status: number | null;
  errorType: string | null;
  /** `error.message` (what the code emits) or `error.error` (what the docs say). */
  errorMessage: string | null;
  envelopeMessage: string | null;
  dataError: number | null;
  data: unknown;
  /** false only when we are sure the request never reached the server. */
  sentRequest: boolean;
  code: string | null;
  operation: string;

  constructor(init: BlueBubblesErrorInit) {
    super(init.message);
    this.kind = init.kind;
    this.operation = init.operation;
    this.status = init.status ?? null;
    this.errorType = init.errorType ?? null;
    this.errorMessage = init.errorMessage ?? null;
    this.envelopeMessage = init.envelopeMessage ?? null;
    this.dataError = init.dataError ?? null;
    this.data = init.data;
    this.sentRequest = init.sentRequest;
    this.code = init.code ?? null;
  }
}

export function redactUrl(url: string): string {
  return url.replace(/([?&](?:password|guid|token)=)[^&#]*/gi, "$1***");
}

const KNOWN_MESSAGE_ERRORS: Record<number, string> = {
  4: "send timed out in Messages",
  22: "recipient not registered with iMessage",
};

export function describeBlueBubblesError(e: unknown): string {
  if (e instanceof BlueBubblesError) {
    switch (e.kind) {
      case "timeout":
        return "BlueBubbles did not answer in time (outcome unknown)";
      case "network":
        if (e.code === "EFORBIDDENADDRESS") return `BlueBubbles server's address refused: ${FORBIDDEN_PROVIDER_DESTINATION}`;
        return e.sentRequest
          ? `connection to BlueBubbles lost mid-request${e.code ? ` (${e.code})` : ""}`
          : `could not reach BlueBubbles${e.code ? ` (${e.code})` : ""}`;
      case "too_large":
        return "attachment larger than allowed";
      case "garbage":
        return `unexpected response from BlueBubbles${e.status != null ? ` (HTTP ${e.status})` : ""}`;
      case "http": {
        const what = [e.errorMessage, e.envelopeMessage].filter((s): s is string => !!s);
        let text = `${e.errorType ?? `HTTP ${e.status ?? "error"}`}: ${what[0] ?? "no details"}`;
        if (e.dataError != null && e.dataError !== 0) {
          const known = KNOWN_MESSAGE_ERRORS[e.dataError];
          text += ` (message error ${e.dataError}${known ? `: ${known}` : ""})`;
        } else if (e.errorType === "iMessage Error" && e.data === null) {
          text += " (no matching message found; it may still have been sent)";
        }
        return truncate(text, 300);
      }
    }
  }
  if (e instanceof Error) return truncate(redactUrl(e.message), 300);
  return truncate(redactUrl(String(e)), 300);
}
