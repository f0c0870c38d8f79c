import { pino, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.js';

/**
 * Where request headers, bodies or raw request bytes can appear in a log line, at any level:
 * Fastify's request serialiser (`req`), @fastify/multipart's trace of its busboy options (which
 * carry the request's headers), an error from the HTTP parser (`rawPacket`: the bytes as
 * received, headers included), and anything of ours that logs `headers` or `body`. Named paths
 * only: wildcards (`*.headers…`) make pino look through every object of every line, on every
 * request; `scrubSecrets` is there for what no path foresaw.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.body',
  'res.headers["set-cookie"]',
  'busboyOptions.headers.authorization',
  'busboyOptions.headers.cookie',
  'busboyOptions.headers["proxy-authorization"]',
  'headers.authorization',
  'headers.cookie',
  'headers["proxy-authorization"]',
  'body',
  'rawPacket',
  'err.rawPacket',
];

// Key material (`fsk_…`), any bearer token, and the signature of a signed download URL (formsign's
// `signature=` or S3's `X-Amz-Signature=`: the URL works without a key until it expires),
// wherever it appears in a line.
const SECRET = /fsk_[A-Za-z0-9]+|(\bbearer\s+)[^\s"\\,]+|(\bsignature=)[^&\s"\\,]+/gi;

/**
 * The last line of defence: a line that still holds a key, a bearer token or a download URL's
 * signature (in a message, an error's text, a request's URL, a path we did not foresee) has it
 * replaced before it is written. The test is
 * cheap (`includes`) on the lines that hold neither, which is all of them normally.
 */
export function scrubSecrets(line: string): string {
  const suspicious = line.includes('fsk_') || /bearer|signature=/i.test(line);
  return suspicious
    ? line.replace(SECRET, (_match, scheme: string | undefined, param: string | undefined) => (scheme ? `${scheme}[redacted]` : param ? `${param}[redacted]` : '[redacted]'))
    : line;
}

/** The service's logger (the API server's and the workers'): JSON lines, secrets redacted at every level. */
export function createLogger(level: LogLevel, options: Pick<LoggerOptions, 'base'> = {}): Logger {
  return pino(
    {
      level,
      ...options,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: { streamWrite: scrubSecrets },
    },
    // Asynchronous: lines written while a write is in flight go out together, off the request path.
    pino.destination({ sync: false }),
  );
}
