// /api/inngest - the Inngest endpoint (sync with PUT, function runs with POST, introspection
// with GET). Only used when the Inngest engine is configured; see README.
import { serve } from "inngest/next";
import { inngest } from "@/inngest/client";
import { functions } from "@/inngest/functions";

export const { GET, POST, PUT } = serve({ client: inngest, functions });
