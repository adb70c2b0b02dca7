import { ApiReference } from "./reference";

// The API reference: /v1/openapi.json rendered by Scalar, everything it loads served from here.

export const metadata = { title: "Relay API reference" };

export default function DocsPage() {
  return <ApiReference />;
}
