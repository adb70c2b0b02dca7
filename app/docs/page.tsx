import Link from "next/link";
import { openApiDocument } from "@/server/transports/openapi/openapi";

// The API reference, rendered from the same OpenAPI document as /v1/openapi.json.

export const metadata = { title: "Relay API reference" };

type Schema = { $ref?: string; type?: string | string[]; anyOf?: Schema[]; allOf?: Schema[]; items?: Schema; enum?: unknown[]; const?: unknown; default?: unknown; description?: string };
type Parameter = { name: string; in: string; required: boolean; description?: string; schema: Schema };
type Op = {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema & { properties?: Record<string, Schema>; required?: string[] }; example?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
  "x-codeSamples": { source: string }[];
};

function typeOf(s: Schema | undefined): string {
  if (!s) return "unknown";
  if (s.$ref) return s.$ref.split("/").pop()!;
  if (s.anyOf) return s.anyOf.map(typeOf).join(" | ");
  // A success body is its object plus request_id (allOf [object, RequestId]): name the object.
  if (s.allOf) return typeOf(s.allOf[0]);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (s.type === "array") return `${typeOf(s.items)}[]`;
  return Array.isArray(s.type) ? s.type.join(" | ") : (s.type ?? "unknown");
}

function Fields({ rows }: { rows: { name: string; type: string; required: boolean; description?: string }[] }) {
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Type</th>
            <th>Required</th>
            <th>Description</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name}>
              <td className="mono">{r.name}</td>
              <td className="mono small">{r.type}</td>
              <td>{r.required ? "yes" : ""}</td>
              <td className="small">{r.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export default function DocsPage() {
  const doc = openApiDocument();
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Op>).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );
  const tags = doc.tags.map((t) => t.name);
  const schemas = doc.components.schemas as Record<string, Schema & { properties?: Record<string, Schema>; required?: string[] }>;
  return (
    <div className="shell">
      <aside className="sidebar">
        <Link className="brand" href="/">
          Relay API
        </Link>
        <nav aria-label="API reference">
          {tags.map((tag) => (
            <div key={tag}>
              <strong className="small muted">{tag}</strong>
              {ops
                .filter((o) => o.op.tags[0] === tag)
                .map((o) => (
                  <a key={o.op.operationId} href={`#${o.op.operationId}`}>
                    <span className="mono small">{o.method}</span> {o.op.summary}
                  </a>
                ))}
            </div>
          ))}
          <a href="#errors">Errors</a>
          <a href="#webhooks">Webhook events</a>
          <a href="#schemas">Objects</a>
        </nav>
      </aside>
      <main className="content">
        <h1>{doc.info.title}</h1>
        <p>{doc.info.description}</p>
        <p className="small">
          Base URL <code>{doc.servers[0]?.url}</code> · Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1)
        </p>
        {ops.map(({ path, method, op }) => {
          const body = op.requestBody?.content["application/json"];
          const success = Object.entries(op.responses).filter(([status]) => Number(status) < 400);
          const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
          return (
            <section key={op.operationId} id={op.operationId} className="panel stack">
              <h2>
                <span className="badge">{method}</span> <code>{path}</code> — {op.summary}
              </h2>
              {op.description.split("\n\n").map((p, i) => (
                <p key={i} className="small">
                  {p}
                </p>
              ))}
              {op.parameters?.length ? (
                <>
                  <strong>Parameters</strong>
                  <Fields rows={op.parameters.map((p) => ({ name: `${p.name} (${p.in})`, type: typeOf(p.schema), required: p.required, description: p.description }))} />
                </>
              ) : null}
              {body ? (
                <>
                  <strong>Body (JSON)</strong>
                  <Fields
                    rows={Object.entries(body.schema.properties ?? {}).map(([name, s]) => ({
                      name,
                      type: typeOf(s),
                      required: body.schema.required?.includes(name) ?? false,
                      description: s.description,
                    }))}
                  />
                </>
              ) : null}
              <strong>Responses</strong>
              <ul className="small">
                {success.map(([status, r]) => (
                  <li key={status}>
                    <code>{status}</code> {r.content ? <code>{typeOf(r.content["application/json"]?.schema)}</code> : null} — {r.description}
                  </li>
                ))}
                {errors.map(([status, r]) => (
                  <li key={status}>
                    <code>{status}</code> {r.description}
                  </li>
                ))}
              </ul>
              <strong>Example</strong>
              <pre className="mono small" style={{ whiteSpace: "pre-wrap", overflowX: "auto" }}>
                {op["x-codeSamples"][0]?.source}
              </pre>
            </section>
          );
        })}
        <section id="errors" className="panel stack">
          <h2>Errors</h2>
          <p className="small">
            Every error is <code>{"{ error: { type, code, message, param? }, request_id }"}</code>. The codes:
          </p>
          <Fields rows={Object.entries(doc["x-error-codes"]).map(([code, e]) => ({ name: code, type: String(e.status), required: false, description: e.type }))} />
        </section>
        <section id="webhooks" className="panel stack">
          <h2>Webhook events</h2>
          <p className="small">{Object.values(doc.webhooks)[0]?.post.description}</p>
          <ul>
            {Object.keys(doc.webhooks).map((name) => (
              <li key={name} className="mono">
                {name}
              </li>
            ))}
          </ul>
        </section>
        <section id="schemas" className="stack">
          <h2>Objects</h2>
          {Object.entries(schemas)
            .filter(([name]) => !name.endsWith("Page"))
            .map(([name, s]) => (
              <div key={name} id={`schema-${name}`} className="panel stack">
                <h3 style={{ margin: 0 }}>{name}</h3>
                <Fields
                  rows={Object.entries(s.properties ?? {}).map(([field, f]) => ({
                    name: field,
                    type: typeOf(f),
                    required: s.required?.includes(field) ?? false,
                    description: f.description,
                  }))}
                />
              </div>
            ))}
        </section>
      </main>
    </div>
  );
}
