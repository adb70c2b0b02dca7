import Link from "next/link";

export default function Home() {
  return (
    <main className="auth-card" style={{ maxWidth: 640, padding: "0 1rem" }}>
      <div className="panel stack">
        <h1>Relay</h1>
        <p>A self-hostable messaging delivery service: send and receive iMessage and SMS through a JSON API under <code>/v1</code>, GraphQL and signed webhooks.</p>
        <div className="row">
          <Link className="button primary" href="/dashboard">
            Open the dashboard
          </Link>
          <Link className="button" href="/sign-up">
            Sign up
          </Link>
          <a className="button" href="/docs">
            API reference
          </a>
        </div>
        <p className="small muted">
          API: <code>curl -H &quot;Authorization: Bearer sk_live_…&quot; /v1/lines</code>. Keys come from the dashboard or <code>npm run -s admin -- key create</code>.
        </p>
      </div>
    </main>
  );
}
