import { z } from "zod";
import { MAX_URL_LENGTH } from "../http-out/url-guard";
import { trimTrailingSlashes } from "../kernel/strings";
import { providerUrlProblem } from "./http";

// The URL settings of provider lines (a BlueBubbles server, an SMS Gateway API, Twilio's base
// URL), one schema for every way a line is connected (tRPC, GraphQL, the operator CLI): at
// most MAX_URL_LENGTH characters, checked before anything else reads them; http(s) without
// credentials; a destination the provider address guard allows (see ./http.ts); trailing
// slashes trimmed in one pass. The guard runs again on every request, so a setting saved
// before the guard existed, or a name that resolves elsewhere later, is still refused.

/** `notAUrl`: the message for a value that is not an absolute URL ("must be the server's URL, e.g. …"). */
export function providerUrlSetting(notAUrl: string) {
  return z
    .string()
    .max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} characters`)
    .trim()
    .superRefine((url, ctx) => {
      if (url.length > MAX_URL_LENGTH) return;
      const problem = providerUrlProblem(url);
      if (problem) ctx.addIssue({ code: "custom", message: problem === "must be an absolute URL" ? notAUrl : problem });
    })
    .transform((url) => trimTrailingSlashes(url));
}
