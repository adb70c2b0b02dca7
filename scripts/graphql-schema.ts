// npm run graphql:schema - prints the GraphQL schema to schema.graphql at the repository root
// (committed, so changes to the API show in review; a test fails when it is out of date).
import { writeFileSync } from "node:fs";
import { printedSchema } from "../server/transports/graphql/schema";

const target = new URL("../schema.graphql", import.meta.url);
writeFileSync(target, printedSchema());
console.log(`wrote ${target.pathname}`);
