import { lexicographicSortSchema, printSchema } from "graphql";
import { builder } from "./builder";
// The registry of types: each module adds its objects, queries and mutations to the builder.
import "./types/lines";
import "./types/line-connections";
import "./types/send-policy";
import "./types/capacity";
import "./types/pools";
import "./types/chats";
import "./types/messages";
import "./types/outbox";
import "./types/files";
import "./types/webhooks";
import "./types/sandbox";
import "./types/api-keys";
import "./types/subscriptions";

export const schema = builder.toSchema();

/** The SDL committed as schema.graphql (npm run graphql:schema). */
export const printedSchema = () => `${printSchema(lexicographicSortSchema(schema))}\n`;
