import { z } from "zod";
import { MAX_URL_LENGTH } from "../http-out/url-guard";
import { trimTrailingSlashes } from "../kernel/strings";
import { providerUrlProblem } from "./http";

// One schema for every way a line is connected (tRPC, GraphQL, the operator CLI). The guard runs again on every
// request, so a name that resolves elsewhere later is still refused.

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
