import { sql } from "../db";

export function lineStatusCounts(): Promise<{ provider: string; status: string; n: number }[]> {
  return sql(`SELECT platform AS provider, status, count(*)::int AS n FROM "Line" GROUP BY platform, status`);
}
