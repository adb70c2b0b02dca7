export default function Home() {
  return (
    <main style={{ maxWidth: 720, margin: "4rem auto", padding: "0 1rem", lineHeight: 1.5 }}>
      <h1>Relay</h1>
      <p>A self-hostable messaging delivery service. The JSON API lives under <code>/v1</code>.</p>
      <p>
        Try <code>curl -H &quot;Authorization: Bearer sk_live_…&quot; /v1/lines</code>. The first development key is printed
        in the server log on first start; more come from <code>npm run -s admin -- key create</code>.
      </p>
    </main>
  );
}
