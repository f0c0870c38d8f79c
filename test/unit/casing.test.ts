import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/domain/errors.js';
import { camelizeBody, snakeToCamel, type Renames } from '../../src/http/casing.js';
import { jsonPointerToPath } from '../../src/http/validation.js';

describe('request key casing', () => {
  it('turns snake_case keys into camelCase at every depth and remembers what was written', () => {
    const renames: Renames = new Map();
    const out = camelizeBody(
      {
        question_text: 'Q',
        is_required: true,
        conditions: [{ source_question_id: 'a', operator: 'equals' }],
        nested: { page_number: 2, alreadyCamel: 1 },
      },
      new Set(),
      renames,
    );
    assert.deepEqual(out, {
      questionText: 'Q',
      isRequired: true,
      conditions: [{ sourceQuestionId: 'a', operator: 'equals' }],
      nested: { pageNumber: 2, alreadyCamel: 1 },
    });
    assert.equal(renames.get('conditions[0].sourceQuestionId'), 'source_question_id');
    assert.equal(renames.get('questionText'), 'question_text');
  });

  it('leaves the values of opaque keys exactly as given', () => {
    const settings = { theme_color: 'red', deep: { snake_key: [{ a_b: 1 }] } };
    const out = camelizeBody({ title: 't', settings }, new Set(['settings']), new Map());
    assert.deepEqual(out, { title: 't', settings });
  });

  it('refuses both spellings of one key, in either order', () => {
    for (const body of [{ sectionId: 'a', section_id: 'b' }, { section_id: 'b', sectionId: 'a' }, { x: [{ page_number: 1, pageNumber: 2 }] }]) {
      assert.throws(
        () => camelizeBody(body, new Set(), new Map()),
        (e: unknown) => e instanceof AppError && e.code === 'validation_failed' && /given twice/.test(e.hint),
      );
    }
  });

  it('converts names and pointers', () => {
    assert.equal(snakeToCamel('min_length'), 'minLength');
    assert.equal(snakeToCamel('x2_y'), 'x2Y');
    assert.equal(jsonPointerToPath('/fields/3/x'), 'fields[3].x');
    assert.equal(jsonPointerToPath(''), '');
    assert.equal(jsonPointerToPath('/a~1b/0'), 'a/b[0]');
  });
});
