// Phone numbers as + and digits, anything else (an email-style account ID) lowercased.

const PHONE_CHARS = /^\+?[\d\s().-]{4,}$/;

export function normalizeHandle(raw: string): string {
  const value = raw.trim();
  if (PHONE_CHARS.test(value) && /\d/.test(value)) {
    const digits = value.replace(/\D/g, "");
    return `+${digits}`;
  }
  return value.toLowerCase();
}

export function isPhoneNumber(handle: string): boolean {
  return /^\+\d{4,15}$/.test(handle);
}
