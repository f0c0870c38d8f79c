import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import client from 'prom-client';
import { AppError } from '../domain/errors.js';
import type { Store } from '../store/db.js';
import { sendError } from './errors.js';

/**
 * `GET /metrics` in the Prometheus text format (API.md, Integration conveniences), served only
 * with `METRICS=true`; with `METRICS_TOKEN` it requires `Authorization: Bearer <token>`. It is
 * outside /api/v1: no API key, not rate limited, not in the OpenAPI document.
 *
 * - `formsign_http_requests_total` and `formsign_http_request_duration_seconds` by method, route
 *   (the route's pattern, never the raw URL: a bounded number of series) and status;
 * - `formsign_rate_limit_refusals_total`, `formsign_uploads_total` by status,
 *   `formsign_idempotent_replays_total`;
 * - `formsign_parse_jobs` by status and `formsign_parse_queue_depth` (due pending jobs), and
 *   `formsign_webhook_deliveries` by status and `formsign_webhook_queue_depth` (due pending
 *   deliveries), read from the database at each scrape (so every server reports the whole
 *   deployment's queues);
 * - Node's process metrics (`process_*`, `nodejs_*`: memory, CPU, event loop lag, handles).
 */
export interface MetricsOptions {
  store: Store;
  token: string | null;
  now: () => number;
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function registerMetrics(app: FastifyInstance, options: MetricsOptions): client.Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new client.Counter({ name: 'formsign_http_requests_total', help: 'HTTP requests answered, by method, route and status', labelNames, registers: [registry] });
  const duration = new client.Histogram({
    name: 'formsign_http_request_duration_seconds',
    help: 'Time from the request\'s arrival to its answer, by method, route and status',
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const refusals = new client.Counter({ name: 'formsign_rate_limit_refusals_total', help: 'Requests refused with 429 rate_limited', registers: [registry] });
  const uploads = new client.Counter({ name: 'formsign_uploads_total', help: 'Document uploads answered, by status', labelNames: ['status'], registers: [registry] });
  const replays = new client.Counter({ name: 'formsign_idempotent_replays_total', help: 'POSTs answered with the kept answer of an earlier request with the same Idempotency-Key', registers: [registry] });
  const { db } = options.store;
  new client.Gauge({
    name: 'formsign_parse_jobs',
    help: 'Parse jobs in the database, by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await db.selectFrom('jobs').select(['status', sql<number>`count(*)`.as('n')]).groupBy('status').execute();
      this.reset();
      for (const status of ['pending', 'processing', 'completed', 'failed']) this.set({ status }, 0);
      for (const row of rows) this.set({ status: row.status }, Number(row.n));
    },
  });
  new client.Gauge({
    name: 'formsign_parse_queue_depth',
    help: 'Pending parse jobs that are due (waiting for a worker)',
    registers: [registry],
    async collect() {
      const now = new Date(options.now()).toISOString();
      const row = await db.selectFrom('jobs').select(sql<number>`count(*)`.as('n')).where('status', '=', 'pending').where('run_at', '<=', now).executeTakeFirst();
      this.set(Number(row?.n ?? 0));
    },
  });

  new client.Gauge({
    name: 'formsign_webhook_deliveries',
    help: 'Webhook deliveries in the database, by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await db.selectFrom('webhook_deliveries').select(['status', sql<number>`count(*)`.as('n')]).groupBy('status').execute();
      this.reset();
      for (const status of ['pending', 'succeeded', 'failed']) this.set({ status }, 0);
      for (const row of rows) this.set({ status: row.status }, Number(row.n));
    },
  });
  new client.Gauge({
    name: 'formsign_webhook_queue_depth',
    help: 'Pending webhook deliveries that are due (waiting for a worker)',
    registers: [registry],
    async collect() {
      const now = new Date(options.now()).toISOString();
      const row = await db
        .selectFrom('webhook_deliveries')
        .select(sql<number>`count(*)`.as('n'))
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .executeTakeFirst();
      this.set(Number(row?.n ?? 0));
    },
  });

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? '(no route)';
    if (route === '/metrics') return done();
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) refusals.inc();
    if (request.method === 'POST' && route === '/api/v1/documents') uploads.inc({ status: labels.status });
    if (reply.getHeader('idempotent-replayed') === 'true') replays.inc();
    done();
  });

  const expected = options.token === null ? null : crypto.createHash('sha256').update(options.token).digest();
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (expected) {
      const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '');
      const given = crypto.createHash('sha256').update(match?.[1] ?? '').digest();
      if (!match || !crypto.timingSafeEqual(given, expected)) {
        const code = match ? 'invalid_api_key' : 'missing_api_key';
        return sendError(reply, new AppError(code, 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>".', { 'www-authenticate': 'Bearer' }));
      }
    }
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
  return registry;
}
