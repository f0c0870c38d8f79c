import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/domain/errors.js';
import { camelizeBody, MAX_DEPTH, MAX_JSON_VALUES, MAX_KEYS, precheckJson, snakeToCamel, type Renames } from '../../src/http/casing.js';
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

describe('snakeToCamel and the JSON precheck', () => {
  it('snakeToCamel is the rule `_x` → `X` for a lower-case letter or digit, on every kind of key', () => {
    const rule = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    const alphabet = ['_', 'a', 'z', 'A', '0', '9', '-', 'é', ' '];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    const keys = ['', '_', '__', 'a_', '_a', 'a__b', 'a_1_b', 'section_id', 'x_A', 'ends_with_'];
    for (let i = 0; i < 5000; i++) keys.push(Array.from({ length: next() % 9 }, () => alphabet[next() % alphabet.length]).join(''));
    for (const key of keys) assert.equal(snakeToCamel(key), rule(key), JSON.stringify(key));
  });

  it('refuses absurd nesting and more values than the limit before parsing; strings do not count', () => {
    assert.equal(precheckJson('{"a":[1,2,{"b":"[[[[,,,,"}]}'), null);
    assert.equal(precheckJson(`${'['.repeat(2 * MAX_DEPTH)}${']'.repeat(2 * MAX_DEPTH)}`), null, 'left to the precise check, which names the key');
    assert.match(precheckJson(`${'['.repeat(2 * MAX_DEPTH + 1)}${']'.repeat(2 * MAX_DEPTH + 1)}`) ?? '', /nested more than 32 levels/);
    const items = (n: number) => `[${Array(n).fill('0').join(',')}]`;
    assert.equal(precheckJson(items(MAX_JSON_VALUES)), null);
    assert.match(precheckJson(items(MAX_JSON_VALUES + 2)) ?? '', /more than 100,000 values/);
    // An escaped quote does not end a string: what follows it is still inside.
    assert.equal(precheckJson(`["\\", "\"${'['.repeat(200)}"]`), null);
    assert.equal(precheckJson(`["${','.repeat(MAX_JSON_VALUES + 5)}"]`), null);
    const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":[1,2]`).join(',')}}`;
    assert.equal(precheckJson(`{"a":${members(16_384)}}`), null);
    assert.match(precheckJson(`{"a":${members(16_385)}}`) ?? '', /an object of more than 16,384 keys/);
    // Items of an array are not keys, and an inner object's members are its own.
    assert.equal(precheckJson(`[${Array(20_000).fill('{"a":1,"b":2}').join(',')}]`), null);
  });

  it('refuses an object of more keys than any object of the API holds, naming where it is; free objects are not counted', () => {
    const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k_${i}`, 1]));
    assert.doesNotThrow(() => camelizeBody({ fields: [wide(MAX_KEYS)] }, new Set(), new Map()));
    assert.throws(
      () => camelizeBody({ fields: [wide(MAX_KEYS + 1)] }, new Set(), new Map()),
      (error: unknown) => error instanceof AppError && error.code === 'validation_failed' && /fields\[0\]: has 5001 keys/.test(error.hint),
    );
    assert.doesNotThrow(() => camelizeBody({ answers: wide(MAX_KEYS + 1) }, new Set(['answers']), new Map()));
    assert.doesNotThrow(() => camelizeBody({ settings: wide(MAX_KEYS + 1) }, new Set(['settings']), new Map()));
  });
});

