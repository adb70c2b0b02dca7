import type { ReactNode } from "react";
import { requireSession } from "./require-session";
import { accountOverview } from "@/server/services/accounts/accounts";
import { simulatorStatus } from "@/server/services/inbound/simulated-phone";
import { DashboardSettingsProvider } from "@/components/dashboard-settings";
import { Nav } from "./nav";

// Rendered per request, never at build: `next build` would otherwise try to prerender every
// page, and reading the session (its secret lives in the database) would open DATA_DIR.
export const dynamic = "force-dynamic";

// Every dashboard page needs a session; without one, sign in first.
export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const actor = await requireSession();
  const account = await accountOverview(actor.accountId);
  const settings = { simulator: simulatorStatus().enabled };
  return (
    <DashboardSettingsProvider value={settings}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className="shell">
        <Nav email={account.email} />
        <main className="content" id="main">
          {children}
        </main>
      </div>
    </DashboardSettingsProvider>
  );
}
