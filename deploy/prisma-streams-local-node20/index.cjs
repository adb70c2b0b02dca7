throw new Error("@prisma/streams-local is replaced in this project (package.json overrides): `prisma dev` is not supported here; use `npm run dev`.");
