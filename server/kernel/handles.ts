// Contact and line handles: phone numbers in E.164-like form (+ and digits), anything else
// (an email-style platform account ID) lowercased, so "+1 (555) 010-2000" and "+15550102000"
// name the same person.

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
