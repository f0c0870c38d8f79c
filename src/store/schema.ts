/**
 * Row types as stored. Both dialects store the same thing: ids and times as text (ISO 8601 UTC
 * with milliseconds, which sorts correctly as text), booleans as 0/1, JSON as text. Repositories
 * turn rows into API objects; nothing else sees these types.
 */
export interface WorkspaceRow {
  id: string;
  slug: string;
  created_at: string;
}

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  /** The first characters of the key, kept in clear to find the row and to show in listings. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  key_hash: string;
  /** JSON array of permission-style grants. */
  grants: string;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

export interface FormRow {
  id: string;
  workspace_id: string;
  title: string;
  description: string | null;
  status: string;
  /** JSON object, kept as the client gave it. */
  settings: string;
  current_version: number | null;
  has_unpublished_changes: number;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface SchemaMigrationRow {
  id: string;
  applied_at: string;
}

export interface Database {
  workspaces: WorkspaceRow;
  api_keys: ApiKeyRow;
  forms: FormRow;
  schema_migrations: SchemaMigrationRow;
}
