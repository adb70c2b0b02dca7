import { OverviewStatsQuery, overviewStats } from "../../../services/stats/overview-stats";
import { protectedProcedure, router } from "../init";

// The overview's charts: the last 14 days, bucketed in the browser's time zone.
export const statsRouter = router({
  overview: protectedProcedure.input(OverviewStatsQuery).query(({ ctx, input }) => overviewStats(ctx.actor, input)),
});
