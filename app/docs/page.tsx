import { ApiReference } from "./reference";

// The API reference: /v1/openapi.json rendered by Scalar (Markdown, tables, a sidebar with
// search, and a try-it console that takes an API key). Everything it loads is served from here.

export const metadata = { title: "Relay API reference" };

export default function DocsPage() {
  return <ApiReference />;
}
