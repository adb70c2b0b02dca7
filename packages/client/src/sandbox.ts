// The sandbox pairing link: what a phone's camera opens (from a QR code) to text the
// activation code to the sandbox line.

/**
 * `sms:` link that opens a new text to `handle` with `code` filled in. `?&body=` is the form
 * both iOS (which reads `&body=`) and Android (RFC 5724's `?body=`) pre-fill.
 */
export function sandboxSmsLink(handle: string, code: string): string {
  return `sms:${handle}?&body=${encodeURIComponent(code)}`;
}
