/** `sms:` link with `code` pre-filled: `?&body=` is the one form both iOS (`&body=`) and Android (`?body=`) read. */
export function sandboxSmsLink(handle: string, code: string): string {
  return `sms:${handle}?&body=${encodeURIComponent(code)}`;
}
