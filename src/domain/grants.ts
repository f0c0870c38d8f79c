/**
 * The grants a key can hold. Each permission (`<resource>:<verb>`) may also be written in scope
 * style (`<verb>:<resource>`); both mean the same and are normalised once, here.
 */
export const PERMISSIONS = [
  'documents:read',
  'documents:write',
  'documents:delete',
  'documents:parse_ai',
  'forms:read',
  'forms:write',
  'forms:delete',
  'revisions:read',
  'webhooks:manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** Scope-style spelling of each permission; `null` where the contract defines none. */
export const SCOPE_SPELLING: Record<Permission, string | null> = {
  'documents:read': 'read:documents',
  'documents:write': 'write:documents',
  'documents:delete': 'delete:documents',
  'documents:parse_ai': null,
  'forms:read': 'read:forms',
  'forms:write': 'write:forms',
  'forms:delete': 'delete:forms',
  'revisions:read': 'read:revisions',
  'webhooks:manage': 'webhooks',
};

const BY_SPELLING = new Map<string, Permission>();
for (const permission of PERMISSIONS) {
  BY_SPELLING.set(permission, permission);
  const scope = SCOPE_SPELLING[permission];
  if (scope) BY_SPELLING.set(scope, permission);
}

/** The permission a grant names in either spelling, or `null` for an unknown grant. */
export function normalizeGrant(grant: string): Permission | null {
  return BY_SPELLING.get(grant.trim()) ?? null;
}

/** Every accepted spelling, for help texts. */
export function allGrantSpellings(): string[] {
  return [...BY_SPELLING.keys()];
}

/** `forms:read (read:forms)`: a permission with its scope spelling, for hints. */
export function describeGrant(permission: Permission): string {
  const scope = SCOPE_SPELLING[permission];
  return scope ? `${permission} (${scope})` : permission;
}

/** The required permissions that `held` lacks, in the order they were required. */
export function missingGrants(required: readonly Permission[], held: ReadonlySet<Permission>): Permission[] {
  return required.filter((permission) => !held.has(permission));
}
