/** Bundles scripts/admin.ts of the repository at `root` into `outfile` (one ES module; see bundle-admin.mjs); returns the packages left external. */
export function bundleAdmin(root: string, outfile: string): Promise<string[]>;
