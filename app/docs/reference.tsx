"use client";
import "@scalar/api-reference-react/style.css";
import dynamic from "next/dynamic";
import { Loading } from "@/components/widgets";

// Scalar's reference is a Vue app in a React wrapper that touches `window` when it loads: it
// runs in the browser only. Its configuration keeps it to this server: no web fonts, no
// telemetry, no request proxy (the try-it console calls /v1 on this origin directly), no AI
// agent (Scalar turns it on by itself on localhost) and no "Open API Client" link (it opens
// the document in Scalar's hosted client).
const ApiReferenceReact = dynamic(() => import("@scalar/api-reference-react").then((m) => m.ApiReferenceReact), {
  ssr: false,
  loading: () => (
    <main style={{ padding: "1.5rem" }}>
      <Loading what="Loading the API reference" />
    </main>
  ),
});

export function ApiReference() {
  return (
    <ApiReferenceReact
      configuration={{
        url: "/v1/openapi.json",
        title: "Relay API reference",
        withDefaultFonts: false,
        telemetry: false,
        agent: { disabled: true },
        hideClientButton: true,
        showDeveloperTools: "never",
        documentDownloadType: "json",
        persistAuth: false,
        authentication: { preferredSecurityScheme: "apiKey" },
        defaultHttpClient: { targetKey: "shell", clientKey: "curl" },
        // The sidebar's "Powered by Scalar" is a link off this server: hidden like the rest.
        customCss:
          ".scalar-app { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; } .scalar-app a[href^='https://www.scalar.com'] { display: none; }",
      }}
    />
  );
}
