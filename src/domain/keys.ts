import crypto from 'node:crypto';

/**
 * API keys look like `fsk_` followed by 43 base62 characters (256 random bits). The first
 * `PREFIX_LENGTH` characters are kept in clear to find the row and to show in listings; only a
 * SHA-256 of the whole key is stored, and the comparison is constant-time.
 */
export const KEY_PREFIX = 'fsk_';
const SECRET_LENGTH = 43;
export const PREFIX_LENGTH = KEY_PREFIX.length + 8;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9]{${SECRET_LENGTH}}$`);

export function generateKey(): string {
  let secret = '';
  while (secret.length < SECRET_LENGTH) {
    for (const byte of crypto.randomBytes(64)) {
      // 248 = 4 × 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && secret.length < SECRET_LENGTH) secret += ALPHABET[byte % 62];
    }
  }
  return KEY_PREFIX + secret;
}

export function looksLikeKey(candidate: string): boolean {
  return KEY_SHAPE.test(candidate);
}

export function keyPrefix(key: string): string {
  return key.slice(0, PREFIX_LENGTH);
}

export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key).digest('hex');
}

/** Constant-time comparison of two hex digests of equal length. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}
