import { FORBIDDEN_PROVIDER_DESTINATION, type ProviderFailureKind, truncate } from "../http";
import type { SendResult } from "../types";
import { TWILIO_ERROR_CODES, type TwilioErrorCodeInfo } from "./error-codes";

export { TWILIO_ERROR_CODES,    } from "./error-codes";

const BY_CODE = new Map(TWILIO_ERROR_CODES.map((c) => [c.code, c]));

function twilioErrorCode(code: number | null | undefined): TwilioErrorCodeInfo | undefined {
  return code === null || code === undefined ? undefined : BY_CODE.get(code);
}

/** Twilio's own text for codes not in the table. */
export function twilioErrorText(code: number, twilioMessage?: string | null): string {
  const known = BY_CODE.get(code);
  if (known) return `${code} ${known.reason}`;
  const message = twilioMessage?.trim();
  return message ? `${code} ${truncate(message, 200)}` : `${code} (see https://www.twilio.com/docs/api/errors/${code})`;
}

export type TwilioErrorKind =
  | ProviderFailureKind
  | "too_large"
  /** We refused the call ourselves (a media URL outside Twilio's hosts). */
  | "refused";

export interface TwilioErrorInit {
  kind: TwilioErrorKind;
  operation: string;
  message: string;
  sentRequest: boolean;
  status?: number | null;
  code?: number | null;
  twilioMessage?: string | null;
  retryAfterMs?: number | null;
  networkCode?: string | null;
}

export class TwilioError extends Error {
  override name = "TwilioError";
  readonly kind: TwilioErrorKind;
  /** The route, never a URL with credentials. */
  readonly operation: string;
  readonly sentRequest: boolean;
  readonly status: number | null;
  readonly code: number | null;
  readonly twilioMessage: string | null;
  readonly retryAfterMs: number | null;
  readonly networkCode: string | null;

  constructor(init: TwilioErrorInit) {
    super(init.message);
    this.kind = init.kind;
    this.operation = init.operation;
    this.sentRequest = init.sentRequest;
    this.status = init.status ?? null;
    this.code = init.code ?? null;
    this.twilioMessage = init.twilioMessage ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.networkCode = init.networkCode ?? null;
  }
}

export function describeTwilioError(e: unknown): string {
  if (!(e instanceof TwilioError)) return truncate(e instanceof Error ? e.message : String(e), 300);
  switch (e.kind) {
    case "timeout":
      return "Twilio did not answer in time (outcome unknown)";
    case "network":
      if (e.networkCode === "EFORBIDDENADDRESS") return `Twilio base URL's address refused: ${FORBIDDEN_PROVIDER_DESTINATION}`;
      return e.sentRequest ? `connection to Twilio lost mid-request${e.networkCode ? ` (${e.networkCode})` : ""}` : `could not reach Twilio${e.networkCode ? ` (${e.networkCode})` : ""}`;
    case "too_large":
    case "refused":
      return truncate(e.message, 300);
    case "garbage":
      return `unexpected answer from Twilio${e.status !== null ? ` (HTTP ${e.status})` : ""}`;
    case "http": {
      if (e.code !== null) return truncate(`Twilio error ${twilioErrorText(e.code, e.twilioMessage)} (HTTP ${e.status ?? "?"})`, 300);
      return truncate(`Twilio answered HTTP ${e.status ?? "?"}${e.twilioMessage ? `: ${e.twilioMessage}` : ""}`, 300);
    }
  }
}

type Failure = Extract<SendResult, { ok: false }>;

/** Only an error answer proves nothing was created; anything else that may have reached Twilio is `unknown`. */
export function sendFailure(err: unknown): Failure {
  const reason = describeTwilioError(err);
  const unknown: Failure = { ok: false, permanent: false, unknown: true, unreachable: true, reason };
  if (!(err instanceof TwilioError)) return unknown;
  switch (err.kind) {
    case "timeout":
    case "garbage":
    case "too_large":
      return unknown;
    case "network":
      return err.sentRequest ? unknown : { ok: false, permanent: false, unreachable: true, reason };
    case "refused":
      return { ok: false, permanent: true, reason };
    case "http":
      break;
  }
  const status = err.status ?? 0;
  const known = twilioErrorCode(err.code);
  if (status === 401 || status === 403 || status === 404 || known?.action === "wait") {
    // Wrong credentials or account SID: nothing was created, and nothing will be until the operator fixes them.
    return { ok: false, permanent: false, unreachable: true, reason: `${reason}; check the line's Account SID and Auth Token` };
  }
  if (status === 429 || known?.category === "throttling") {
    // Throttled: certainly not created. The line counts as unreachable so the item waits out the
    // limit within the send window instead of spending its attempts.
    const after = err.retryAfterMs !== null ? `; Twilio asks to retry after ${Math.ceil(err.retryAfterMs / 1000)} s` : "";
    return { ok: false, permanent: false, unreachable: true, reason: `${reason}${after}`, ...(err.retryAfterMs !== null ? { retryAfterMs: err.retryAfterMs } : {}) };
  }
  if (status >= 500) return unknown;
  if (known?.action === "retry") return { ok: false, permanent: false, reason };
  // Any other refusal (400 and the like): Twilio validated the request and created nothing; the
  // same request would be refused again.
  return { ok: false, permanent: true, reason, ...(known?.optedOut ? { optedOut: true } : {}) };
}
