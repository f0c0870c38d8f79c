/**
 * The baseline of bench/http-forms.ts: a bare Fastify route doing the same single-row read on the
 * same SQLite file with a prepared better-sqlite3 statement. No auth, no rate limit, no envelope
 * checks, no logging: what the product's edge costs is the difference.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const db = new Database(path.join(process.env.DATA_DIR!, 'formsign.sqlite'));
db.pragma('journal_mode = WAL');
const byId = db.prepare('select * from forms where id = ?');

const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.get<{ Params: { id: string } }>('/forms/:id', async (request, reply) => {
  const row = byId.get(request.params.id);
  if (!row) return reply.code(404).send({ success: false });
  return { success: true, data: row };
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
