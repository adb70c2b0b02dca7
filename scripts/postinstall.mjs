// Runs after `npm install`: generate the Prisma client (offline, see prisma-generate.mjs).
import "./prisma-generate.mjs";
