// To adopt an own message echoed by a webhook, and when reconciling an unknown send: same text (trimmed) and the
// same attachments by name.

export interface Content {
  text: string | null;
  attachmentNames: string[];
}

const norm = (t: string | null) => (t ?? "").replace(/\s+/g, " ").trim();
const base = (name: string) => name.replace(/\.[^.]*$/, "").toLowerCase();

export function sameContent(ours: Content, theirs: Content): boolean {
  if (norm(ours.text) !== norm(theirs.text)) return false;
  if (ours.attachmentNames.length !== theirs.attachmentNames.length) return false;
  // Providers may convert a file (a voice memo becomes .caf): compare names without extension.
  return ours.attachmentNames.every((n, i) => base(n) === base(theirs.attachmentNames[i]!));
}
