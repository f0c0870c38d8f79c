import crypto from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `v1,` + base64 of
 * HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the bytes the secret
 * (`whsec_<base64>`) encodes. Used to sign deliveries, and usable by receivers to verify them
 * (README, Webhooks).
 */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const mac = crypto.createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => sign(secret, id, timestamp, body)).join(' ');
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/**
 * Checks a delivery as a receiver should: the headers are there, the timestamp is within
 * `toleranceSeconds` of now (a replayed old request fails), and one of the signatures matches
 * the raw body (compared in constant time). Throws `WebhookVerificationError`; answers the
 * parsed body.
 */
export function verifyWebhook(
  secret: string,
  rawBody: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
  options: { toleranceSeconds?: number; now?: number } = {},
): unknown {
  const header = (name: string) => {
    const value = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  if (!/^[0-9]+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - seconds) > (options.toleranceSeconds ?? 300)) throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const expected = Buffer.from(sign(secret, id, seconds, body).slice(3), 'base64');
  for (const candidate of signatures.split(' ')) {
    const [version, mac] = candidate.split(',', 2);
    if (version !== 'v1' || !mac) continue;
    const given = Buffer.from(mac, 'base64');
    if (given.length === expected.length && crypto.timingSafeEqual(given, expected)) return JSON.parse(body) as unknown;
  }
  throw new WebhookVerificationError('no signature matches');
}
