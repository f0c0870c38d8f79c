import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeGrant, missingGrants, normalizeGrant, PERMISSIONS, SCOPE_SPELLING } from '../../src/domain/grants.js';

describe('grants', () => {
  it('normalises both spellings to the permission style', () => {
    assert.equal(normalizeGrant('read:documents'), 'documents:read');
    assert.equal(normalizeGrant('documents:read'), 'documents:read');
    assert.equal(normalizeGrant('write:forms'), 'forms:write');
    assert.equal(normalizeGrant('delete:forms'), 'forms:delete');
    assert.equal(normalizeGrant('read:revisions'), 'revisions:read');
    assert.equal(normalizeGrant('documents:parse_ai'), 'documents:parse_ai');
    assert.equal(normalizeGrant('parse_ai:documents'), null, 'the contract gives parse_ai no scope spelling');
    assert.equal(normalizeGrant('forms:admin'), null);
    assert.equal(normalizeGrant('FORMS:READ'), null, 'grants are case-sensitive');
  });

  it('has a scope spelling for every permission but parse_ai, and they round-trip', () => {
    for (const permission of PERMISSIONS) {
      const scope = SCOPE_SPELLING[permission];
      if (permission === 'documents:parse_ai') assert.equal(scope, null);
      // The contract's one exception to `<verb>:<resource>`.
      else if (permission === 'webhooks:manage') assert.equal(normalizeGrant('webhooks'), permission);
      else {
        const [resource, verb] = permission.split(':');
        assert.equal(scope, `${verb}:${resource}`);
        assert.equal(normalizeGrant(scope!), permission);
      }
    }
  });

  it('names missing grants in both spellings', () => {
    assert.deepEqual(missingGrants(['documents:write', 'documents:parse_ai'], new Set(['documents:write'])), ['documents:parse_ai']);
    assert.deepEqual(missingGrants(['forms:read'], new Set(['forms:read'])), []);
    assert.equal(describeGrant('forms:read'), 'forms:read (read:forms)');
    assert.equal(describeGrant('documents:parse_ai'), 'documents:parse_ai');
  });
});
