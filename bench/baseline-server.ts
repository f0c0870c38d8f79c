/**
 * The baseline of bench/http-forms.ts: a bare Fastify route doing the same reads on the same
 * SQLite file with prepared better-sqlite3 statements (the form row with its question count, and
 * its sections, questions and rules, which `GET /forms/{id}` returns since the form-content issue). No auth, no rate limit, no envelope
 * checks, no logging: what the product's edge costs is the difference.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const db = new Database(path.join(process.env.DATA_DIR!, 'formsign.sqlite'));
db.pragma('journal_mode = WAL');
const byId = db.prepare('select *, (select count(*) from form_questions where form_id = forms.id) as question_count from forms where id = ?');
// GET /forms/{id} answers the form with its sections, questions and rules: the same reads.
const sections = db.prepare('select * from form_sections where form_id = ? order by position');
const questions = db.prepare('select * from form_questions where form_id = ? order by position');
const rules = db.prepare('select * from form_rules where form_id = ? order by position');

const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.get<{ Params: { id: string } }>('/forms/:id', async (request, reply) => {
  const row = byId.get(request.params.id) as Record<string, unknown> | undefined;
  if (!row) return reply.code(404).send({ success: false });
  const id = request.params.id;
  return { success: true, data: { ...row, sections: sections.all(id), questions: questions.all(id), rules: rules.all(id) } };
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
