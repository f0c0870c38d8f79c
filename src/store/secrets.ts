import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * A secret shared by every process of the deployment: made by whichever starts first (32 random
 * bytes, base64url), kept in the database, read by the others. Anyone who can read the database
 * can read it, and every stored file too: it protects nothing they could not see anyway.
 */
export async function serverSecret(db: Kysely<Database>, name: string): Promise<Buffer> {
  await db
    .insertInto('server_secrets')
    .values({ name, value: crypto.randomBytes(32).toString('base64url'), created_at: new Date().toISOString() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(row.value, 'base64url');
}
