// Loaded only by `prisma dev`'s streams server, which this project never runs (it has PGlite).
throw new Error("@prisma/streams-local is replaced in this project (package.json overrides): `prisma dev` is not supported here; use `npm run dev`.");
