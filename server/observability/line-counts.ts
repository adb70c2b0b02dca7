import { sql } from "../db";

/** Lines by provider and connection status (GET /readyz's summary, the relay_provider_lines gauge). */
export function lineStatusCounts(): Promise<{ provider: string; status: string; n: number }[]> {
  return sql(`SELECT platform AS provider, status, count(*)::int AS n FROM "Line" GROUP BY platform, status`);
}
