import { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import { writeRawAnswer } from './raw-answers.js';

export interface BodyRateOptions {
  /** The least average rate a request body must keep, in bytes per second; 0 turns the check off. */
  minBytesPerSecond: number;
  /** How long a body may take before its average rate is judged (slow starts, TCP ramp-up). */
  graceMs: number;
  /** How often the in-flight bodies are looked at. */
  checkEveryMs?: number;
}

interface Watched {
  reply: FastifyReply;
  startedAt: number;
  /** The socket's byte count when the request's headers had arrived. */
  bytesAtStart: number;
}

/**
 * A body that trickles in (slow-loris: one byte a second) holds a socket, a temporary file and an
 * upload slot for as long as the request timeout allows. Every request whose body is still
 * arriving is looked at once a second: once past the grace period, a body whose average rate
 * since its headers is below the minimum is refused with 408 `request_timeout` (written on the
 * socket, which is then closed; the handler waiting for the body sees it end, and an upload
 * removes its temporary file). One timer for all requests, no per-chunk work: the socket's own
 * byte count is the measure.
 */
export function watchBodyRate(app: FastifyInstance, options: BodyRateOptions): void {
  if (options.minBytesPerSecond <= 0) return;
  const watched = new Map<FastifyRequest, Watched>();
  app.addHook('onRequest', (request, reply, done) => {
    // A request without a body (or whose body came with its headers) is complete already; one
    // injected without a network (tests, `app.inject`) has no socket to measure.
    if (!request.raw.complete && request.raw.socket instanceof Socket) watched.set(request, { reply, startedAt: Date.now(), bytesAtStart: request.raw.socket.bytesRead });
    done();
  });
  // A request answered before its body arrived (refused by the guard, say) stays watched: Node
  // reads the rest of the body before the connection can serve another request.
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.raw.complete) watched.delete(request);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    watched.delete(request);
    done();
  });

  const timer = setInterval(() => {
    const now = Date.now();
    for (const [request, watch] of watched) {
      const socket = request.raw.socket;
      if (request.raw.complete || socket.destroyed) {
        watched.delete(request);
        continue;
      }
      const elapsed = now - watch.startedAt;
      if (elapsed < options.graceMs) continue;
      const rate = ((socket.bytesRead - watch.bytesAtStart) * 1000) / elapsed;
      if (rate >= options.minBytesPerSecond) continue;
      watched.delete(request);
      request.log.info({ bytesPerSecond: Math.round(rate), ms: elapsed }, 'request body too slow: refused');
      // Answered already: the connection is simply closed.
      if (watch.reply.raw.headersSent) {
        socket.destroy();
        continue;
      }
      writeRawAnswer(
        socket,
        new AppError(
          'request_timeout',
          `The request body arrived at ${Math.round(rate)} bytes/s on average; this service needs at least ${options.minBytesPerSecond} bytes/s after the first ${options.graceMs / 1000} s. Send it again over a faster connection.`,
        ),
        { ...rateLimitHeaders(watch.reply), 'x-request-id': request.id },
      );
    }
  }, options.checkEveryMs ?? 1000);
  timer.unref();
  app.addHook('onClose', (_instance, done) => {
    clearInterval(timer);
    done();
  });
}

/** The `X-RateLimit-*` headers the guard set on this reply (none when it was refused before the limiter). */
function rateLimitHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return headers;
}
