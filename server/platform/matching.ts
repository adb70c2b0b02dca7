// Whether a message a provider reports is the one we asked it to send: same text (ignoring
// surrounding white space; an attachment-only message has none) and the same attachments by
// name. Used to adopt an own message echoed by a webhook and when reconciling an unknown send.

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
