import Link from "next/link";
import { requireSession } from "./require-session";
import { accountOverview } from "@/server/services/accounts/accounts";
import { OverviewPanels } from "@/components/overview-panels";
import styles from "@/components/overview.module.css";

export default async function OverviewPage() {
  const actor = await requireSession();
  const { email, name, counts } = await accountOverview(actor.accountId);
  const tiles = [
    ["Lines", counts.lines, "/dashboard/lines"],
    ["Chats", counts.chats, "/dashboard/chats"],
    ["Active API keys", counts.keys, "/dashboard/keys"],
    ["Webhooks", counts.webhooks, "/dashboard/webhooks"],
    ["Outbox pending", counts.pending, "/dashboard/outbox?status=pending"],
    ["Outbox failed", counts.failed, "/dashboard/outbox?status=failed"],
  ] as const;
  return (
    <div className={styles.overview}>
      <h1>Welcome{name ? `, ${name}` : ""}</h1>
      <p className="muted">Signed in as {email}.</p>
      <div className={styles.tiles} data-testid="overview-tiles">
        {tiles.map(([label, n, href]) => (
          <Link key={label} href={href} className={styles.tile}>
            <div className={styles.tileLabel}>{label}</div>
            <div className={styles.tileValue}>{n}</div>
          </Link>
        ))}
      </div>
      <OverviewPanels />
    </div>
  );
}
