import { type Kysely, sql } from 'kysely';
import type { Dialect, Store } from './db.js';

/**
 * One portable migration set for SQLite and PostgreSQL. Each migration runs once, inside one
 * transaction together with its bookkeeping row, under a lock that keeps concurrent starters
 * (several `serve` processes, `migrate` beside a running server) from applying it twice.
 * Append new migrations; never edit one that has shipped.
 */
interface Migration {
  id: string;
  up(db: Kysely<any>, dialect: Dialect): Promise<void>;
}

const MIGRATIONS: Migration[] = [
  {
    id: '0001_platform',
    async up(db) {
      await db.schema
        .createTable('workspaces')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('grants', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('revoked_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('api_keys_prefix').on('api_keys').column('prefix').execute();
      await db.schema
        .createTable('forms')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('settings', 'text', (c) => c.notNull())
        .addColumn('current_version', 'integer')
        .addColumn('has_unpublished_changes', 'integer', (c) => c.notNull())
        .addColumn('deleted_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('forms_workspace_created')
        .on('forms')
        .columns(['workspace_id', 'created_at', 'id'])
        .execute();
    },
  },
  {
    id: '0002_documents',
    async up(db, dialect) {
      const real = dialect === 'postgres' ? 'double precision' : 'real';
      await db.schema
        .createTable('documents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('original_filename', 'text', (c) => c.notNull())
        .addColumn('file_type', 'text', (c) => c.notNull())
        .addColumn('mime_type', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'bigint', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('rendition_sha256', 'text')
        .addColumn('page_source', 'text', (c) => c.notNull())
        .addColumn('page_count', 'integer', (c) => c.notNull())
        .addColumn('page_dimensions', 'text', (c) => c.notNull())
        .addColumn('current_version', 'integer')
        .addColumn('has_unpublished_changes', 'integer', (c) => c.notNull())
        .addColumn('deleted_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('documents_workspace_created').on('documents').columns(['workspace_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('documents_sha256').on('documents').column('sha256').execute();
      await db.schema.createIndex('documents_rendition_sha256').on('documents').column('rendition_sha256').execute();
      await db.schema
        .createTable('document_fields')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('document_id', 'text', (c) => c.notNull().references('documents.id').onDelete('cascade'))
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('page_number', 'integer', (c) => c.notNull())
        .addColumn('x', sql.raw(real), (c) => c.notNull())
        .addColumn('y', sql.raw(real), (c) => c.notNull())
        .addColumn('width', sql.raw(real), (c) => c.notNull())
        .addColumn('height', sql.raw(real), (c) => c.notNull())
        .addColumn('is_required', 'integer', (c) => c.notNull())
        .addColumn('is_read_only', 'integer', (c) => c.notNull())
        .addColumn('assignee_role', 'text')
        .addColumn('default_value', 'text')
        .addColumn('direction', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('document_fields_document_position').on('document_fields').columns(['document_id', 'position']).execute();
    },
  },
  {
    id: '0003_form_content',
    async up(db) {
      await db.schema
        .createTable('form_sections')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('form_sections_form_position').on('form_sections').columns(['form_id', 'position']).execute();
      await db.schema
        .createTable('form_questions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('section_id', 'text', (c) => c.references('form_sections.id').onDelete('set null'))
        .addColumn('question_text', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('is_required', 'integer', (c) => c.notNull())
        .addColumn('is_pii', 'integer', (c) => c.notNull())
        .addColumn('priority', 'text', (c) => c.notNull())
        .addColumn('context', 'text')
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('form_questions_form_position').on('form_questions').columns(['form_id', 'position']).execute();
      await db.schema.createIndex('form_questions_section').on('form_questions').column('section_id').execute();
      await db.schema
        .createTable('form_rules')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target_question_id', 'text', (c) => c.references('form_questions.id').onDelete('cascade'))
        .addColumn('target_section_id', 'text', (c) => c.references('form_sections.id').onDelete('cascade'))
        .addColumn('match', 'text', (c) => c.notNull())
        .addColumn('conditions', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('form_rules_form_position').on('form_rules').columns(['form_id', 'position']).execute();
      await db.schema.createIndex('form_rules_target_question').on('form_rules').column('target_question_id').execute();
      await db.schema.createIndex('form_rules_target_section').on('form_rules').column('target_section_id').execute();
    },
  },
  {
    id: '0004_revisions',
    async up(db) {
      // Versions are unique per form / document: the row lock taken by publishing makes them
      // consecutive, the constraint makes a duplicate impossible whatever happens.
      for (const [table, parent, parentTable] of [
        ['form_revisions', 'form_id', 'forms'],
        ['document_revisions', 'document_id', 'documents'],
      ] as const) {
        let create = db.schema
          .createTable(table)
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn(parent, 'text', (c) => c.notNull().references(`${parentTable}.id`).onDelete('cascade'))
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('published_at', 'text', (c) => c.notNull())
          .addColumn('published_by', 'text', (c) => c.notNull())
          .addColumn('changes_summary', 'text', (c) => c.notNull())
          .addColumn('definition_hash', 'text', (c) => c.notNull())
          .addColumn('snapshot', 'text', (c) => c.notNull());
        if (table === 'document_revisions') {
          // The stored files the snapshot refers to: kept while the revision exists.
          create = create.addColumn('sha256', 'text', (c) => c.notNull()).addColumn('rendition_sha256', 'text');
        }
        await create.addUniqueConstraint(`${table}_version`, [parent, 'version']).execute();
      }
      await db.schema.createIndex('document_revisions_sha256').on('document_revisions').column('sha256').execute();
      await db.schema.createIndex('document_revisions_rendition').on('document_revisions').column('rendition_sha256').execute();
    },
  },
  {
    id: '0005_jobs',
    async up(db) {
      // The durable job queue (src/jobs/queue.ts). Parse jobs are its only kind so far; their
      // request and outcome live on the row. Times are ISO 8601 text, as everywhere.
      await db.schema
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('document_id', 'text', (c) => c.notNull().references('documents.id').onDelete('cascade'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('max_attempts', 'integer', (c) => c.notNull())
        .addColumn('run_at', 'text', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('params', 'text', (c) => c.notNull())
        .addColumn('result', 'text')
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('applied', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text')
        .addColumn('completed_at', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_claim').on('jobs').columns(['status', 'run_at']).execute();
      await db.schema.createIndex('jobs_document').on('jobs').columns(['document_id', 'created_at']).execute();
    },
  },
  {
    id: '0006_job_progress',
    async up(db) {
      // Pages read so far by the attempt running now (null until its first report; reset when
      // the job goes back to pending). One column per statement: SQLite adds one at a time.
      await db.schema.alterTable('jobs').addColumn('progress_done', 'integer').execute();
      await db.schema.alterTable('jobs').addColumn('progress_total', 'integer').execute();
    },
  },
  {
    id: '0007_workspace_claims',
    async up(db) {
      // The parse queue's round-robin between workspaces (src/jobs/queue.ts, claim): one row per
      // workspace that ever had a job claimed. No foreign key: a row outliving its workspace is harmless.
      await db.schema
        .createTable('workspace_claims')
        .addColumn('workspace_id', 'text', (c) => c.primaryKey())
        .addColumn('last_claimed_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  {
    id: '0008_revision_bytes',
    async up(db) {
      // Bytes of revision snapshots each workspace stores (forms' and documents' together): the
      // budget publishing is held to, kept as a counter so that a publish checks it with one row
      // update instead of summing every snapshot. Counted from what is stored already.
      await db.schema.alterTable('workspaces').addColumn('revision_bytes', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await sql`update workspaces set revision_bytes =
          (select coalesce(sum(octet_length(r.snapshot)), 0) from form_revisions r join forms f on f.id = r.form_id where f.workspace_id = workspaces.id)
        + (select coalesce(sum(octet_length(r.snapshot)), 0) from document_revisions r join documents d on d.id = r.document_id where d.workspace_id = workspaces.id)`.execute(db);
    },
  },
  {
    id: '0009_question_options',
    async up(db) {
      // Question options as API.md documents them now. Stored `address` questions: `fields` over
      // line1, line2, city, region, postal_code, country became `address_fields` over street,
      // street2, city, state, zip, country (the same parts, renamed). Options that are new with a
      // default (rating `min`, currency and calculation `decimal_places`, slider `step` and
      // `show_value`) are filled in, as a question created today has them; the others are left as
      // stored. Drafts change here once; revisions never change: their snapshots are mapped when
      // read (src/domain/legacy-options.ts). The mapping is written out here, not imported, so this
      // migration does what it did when it shipped.
      const rename: Record<string, string> = { line1: 'street', line2: 'street2', city: 'city', region: 'state', postal_code: 'zip', country: 'country' };
      const fill: Record<string, Record<string, unknown>> = {
        rating: { min: 1 },
        currency: { decimal_places: 2 },
        calculation: { decimal_places: 2 },
        slider: { step: 1, show_value: true },
      };
      const rows = (await db
        .selectFrom('form_questions')
        .select(['id', 'type', 'options'])
        .where('type', 'in', ['address', ...Object.keys(fill)])
        .execute()) as Array<{ id: string; type: string; options: string }>;
      for (const row of rows) {
        const options = JSON.parse(row.options) as Record<string, unknown>;
        let next = options;
        if (row.type === 'address' && Array.isArray(options.fields)) {
          const { fields, ...rest } = options;
          next = { ...rest, address_fields: (fields as string[]).map((f) => rename[f] ?? f) };
        }
        for (const [key, value] of Object.entries(fill[row.type] ?? {})) {
          if (next[key] === undefined) next = { ...next, [key]: value };
        }
        if (next !== options) await db.updateTable('form_questions').set({ options: JSON.stringify(next) }).where('id', '=', row.id).execute();
      }
    },
  },
  {
    id: '0010_blob_store',
    async up(db, dialect) {
      // The blob journal (schema.ts, BlobCheckRow): the sweep reads its old entries instead of
      // listing every stored file.
      await db.schema
        .createTable('blob_checks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('blob_checks_created').on('blob_checks').columns(['created_at']).execute();
      await db.schema.createIndex('blob_checks_sha256').on('blob_checks').columns(['sha256']).execute();
      await db.schema
        .createTable('server_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      if (dialect !== 'postgres') return;
      // BLOB_STORE=postgres (src/blobs/postgres.ts): a file's row, then its bytes in 1 MiB chunks.
      await db.schema
        .createTable('blob_files')
        .addColumn('sha256', 'text', (c) => c.primaryKey())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('chunk_bytes', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('blob_chunks')
        .addColumn('sha256', 'text', (c) => c.notNull().references('blob_files.sha256').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('data', 'bytea', (c) => c.notNull())
        .addPrimaryKeyConstraint('blob_chunks_pk', ['sha256', 'seq'])
        .execute();
      // PDFs and DOCX files are compressed already: storing them out of line without another
      // compression attempt saves the CPU.
      await sql`alter table blob_chunks alter column data set storage external`.execute(db);
    },
  },
  {
    id: '0011_idempotency',
    async up(db) {
      // Idempotency-Key (API.md, Integration conveniences; src/http/idempotency.ts): one row per
      // workspace and key, `running` while the first request runs (until `locked_until`, after
      // which a retry may take it over), then `done` with the response kept until `expires_at`.
      await db.schema
        .createTable('idempotency_keys')
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('locked_until', 'text', (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('response_headers', 'text')
        .addColumn('response_body', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['workspace_id', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_keys_expires').on('idempotency_keys').column('expires_at').execute();
    },
  },
  {
    id: '0012_webhooks',
    async up(db) {
      // Webhook endpoints of a workspace (src/webhooks/). `secret` is needed in clear to sign;
      // `previous_secret` keeps signing beside it until `previous_secret_expires_at` (rotation).
      // `failing_since`: the first failed attempt since the last success (null when healthy).
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('events', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('disabled_reason', 'text')
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', 'text')
        .addColumn('failing_since', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_endpoints_workspace').on('webhook_endpoints').columns(['workspace_id', 'created_at', 'id']).execute();
      // The outbox: one row per event that some endpoint was subscribed to, written in the
      // transaction of the change; `payload` is the exact body sent on every attempt.
      await db.schema
        .createTable('webhook_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_events_created').on('webhook_events').column('created_at').execute();
      // One delivery per event and endpoint, claimed by the workers under a lease.
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('manual', 'integer', (c) => c.notNull())
        .addColumn('scheduled_attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'text')
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // The claim reads each endpoint's due deliveries on this index (src/webhooks/dispatcher.ts).
      await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['endpoint_id', 'status', 'next_attempt_at', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('response_body', 'text')
        .addColumn('error', 'text')
        .execute();
      await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'at']).execute();
    },
  },
  {
    id: '0013_blob_uploads',
    async up(db, dialect) {
      // The upload journal (schema.ts, BlobUploadRow): a file being streamed into the blob store
      // while it is received, before its hash is known; the sweep removes what a crash left.
      await db.schema
        .createTable('blob_uploads')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('ref', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('blob_uploads_created').on('blob_uploads').column('created_at').execute();
      if (dialect !== 'postgres') return;
      // BLOB_STORE=postgres: chunks are written under an upload id while the file arrives, and a
      // `blob_files` row maps the hash to that id once the file is accepted. Existing files keep
      // their chunks: their upload id is their hash (no bytes are rewritten).
      await sql`do $$ declare fk text; begin
        select conname into fk from pg_constraint where conrelid = 'blob_chunks'::regclass and contype = 'f';
        if fk is not null then execute format('alter table blob_chunks drop constraint %I', fk); end if;
      end $$`.execute(db);
      await sql`alter table blob_chunks rename column sha256 to upload_id`.execute(db);
      await sql`alter table blob_files add column upload_id text`.execute(db);
      await sql`update blob_files set upload_id = sha256`.execute(db);
      await sql`alter table blob_files alter column upload_id set not null`.execute(db);
      await sql`create unique index blob_files_upload_id on blob_files (upload_id)`.execute(db);
    },
  },
  {
    id: '0014_blob_rows_inline',
    async up(db, dialect) {
      if (dialect !== 'postgres') return;
      // BLOB_STORE=postgres writes rows of 8,000 bytes from now on (src/blobs/postgres.ts,
      // PG_ROW_BYTES). PostgreSQL moves a value out of its row into TOAST (2 KB pieces, an index
      // entry each) when the row is over the table's toast_tuple_target, 2 KB by default; at its
      // largest, 8160, such a row stays whole in its page. Rows written before (1 MiB) are over
      // it and stay in TOAST, readable as they are: nothing is rewritten.
      await sql`alter table blob_chunks set (toast_tuple_target = 8160)`.execute(db);
    },
  },
  {
    id: '0015_documents_page_sizes_last',
    async up(db, dialect) {
      // SQLite keeps a row's columns in order, a long value's tail in overflow pages: every column
      // after `page_dimensions` (up to 260 KB a document) was read by walking them, so that listing
      // or counting a workspace's documents read all their page sizes (20 ms for 100 documents of
      // 10,000 pages). Moved to the end of the row: the other columns are read without it.
      // PostgreSQL keeps such a value out of its row already (TOAST).
      if (dialect === 'postgres') return;
      await sql`alter table documents add column page_sizes text not null default '[]'`.execute(db);
      await sql`update documents set page_sizes = page_dimensions`.execute(db);
      await sql`alter table documents drop column page_dimensions`.execute(db);
      await sql`alter table documents rename column page_sizes to page_dimensions`.execute(db);
    },
  },
];

/** Applies every pending migration; returns the ids it applied. */
export async function migrate(store: Store): Promise<string[]> {
  const { db, dialect } = store;
  return db.connection().execute(async (conn) => {
    if (dialect === 'postgres') {
      await sql`begin`.execute(conn);
      // Any constant will do: it only has to be the same for every formsign process.
      await sql`select pg_advisory_xact_lock(724031)`.execute(conn);
    } else {
      await sql`begin immediate`.execute(conn);
    }
    try {
      await sql`create table if not exists schema_migrations (id text primary key, applied_at text not null)`.execute(conn);
      const done = new Set((await conn.selectFrom('schema_migrations').select('id').execute()).map((r) => r.id));
      const applied: string[] = [];
      for (const migration of MIGRATIONS) {
        if (done.has(migration.id)) continue;
        await migration.up(conn, dialect);
        await conn
          .insertInto('schema_migrations')
          .values({ id: migration.id, applied_at: new Date().toISOString() })
          .execute();
        applied.push(migration.id);
      }
      await sql`commit`.execute(conn);
      return applied;
    } catch (error) {
      await sql`rollback`.execute(conn).catch(() => {});
      throw error;
    }
  });
}
