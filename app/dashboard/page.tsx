import Link from "next/link";
import { requireSession } from "./session";
import { accountOverview } from "@/server/services/accounts/accounts";

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
    <>
      <h1>Welcome{name ? `, ${name}` : ""}</h1>
      <p className="muted">Signed in as {email}.</p>
      <div className="row" style={{ alignItems: "stretch" }}>
        {tiles.map(([label, n, href]) => (
          <Link key={label} href={href} className="panel" style={{ minWidth: 150, textDecoration: "none", color: "inherit" }}>
            <div className="muted small">{label}</div>
            <div style={{ fontSize: "1.6rem", fontWeight: 700 }}>{n}</div>
          </Link>
        ))}
      </div>
      <div className="panel">
        <h2>Get started</h2>
        <ol>
          <li>
            <Link href="/dashboard/lines">Create a simulated line</Link> (or use the <Link href="/dashboard/sandbox">sandbox</Link> with your own phone).
          </li>
          <li>
            <Link href="/dashboard/keys">Create an API key</Link> and call <code>GET /v1/lines</code> with <code>Authorization: Bearer sk_live_…</code>.
          </li>
          <li>
            Text the line from the <Link href="/dashboard/simulator">simulator</Link> and reply from <Link href="/dashboard/chats">Chats</Link>.
          </li>
          <li>
            <Link href="/dashboard/webhooks">Add a webhook</Link> to receive events in your program.
          </li>
        </ol>
      </div>
    </>
  );
}
