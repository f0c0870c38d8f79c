import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  canonicalJson,
  definitionHash,
  diffDocuments,
  diffForms,
  diffList,
  isEmptyDiff,
  summarize,
  type DocumentDefinition,
  type FormDefinition,
  type SnapshotItem,
} from '../../src/domain/revisions.js';

const question = (id: string, order: number, extra: Record<string, unknown> = {}): SnapshotItem => ({
  id, formId: 'f', order, sectionId: null, questionText: `Q ${id}`, type: 'short_text', isRequired: false, options: {}, createdAt: 't0', updatedAt: 't0', ...extra,
});
const item = (id: string, order: number, extra: Record<string, unknown> = {}): SnapshotItem => ({ id, order, label: id, createdAt: 't0', updatedAt: 't0', ...extra });
const form = (over: Partial<FormDefinition> = {}): FormDefinition => ({
  form: { title: 'T', description: null, settings: {} },
  sections: [],
  questions: [],
  rules: [],
  ...over,
});
const field = (id: string, order: number, extra: Record<string, unknown> = {}): SnapshotItem => ({
  id, documentId: 'd', order, label: id, type: 'text', pageNumber: 1, x: 0.1, y: 0.1, width: 0.2, height: 0.05, createdAt: 't0', updatedAt: 't0', ...extra,
});
const doc = (fields: SnapshotItem[], title = 'Doc'): DocumentDefinition => ({ document: { title, sha256: 'abc' }, fields });

describe('revision diff and generated summary', () => {
  it('counts added, removed and changed items per kind, in the order of the contract example', () => {
    const before = form({
      questions: [question('a', 0), question('b', 1)],
      sections: [item('s1', 0), item('s2', 1)],
      rules: [item('r1', 0, { action: 'show' })],
    });
    const after = form({
      questions: [question('a', 0), question('b', 1), question('c', 2), question('d', 3)],
      sections: [item('s1', 0)],
      rules: [item('r1', 0, { action: 'hide' })],
    });
    assert.equal(summarize(diffForms(before, after)), '+2 questions, -1 section, 1 rule changed');
  });

  it('timestamps and positions shifted by an insert are not changes; a reorder moves the fewest items', () => {
    const before = [question('a', 0), question('b', 1), question('c', 2)];
    // Insert at the front: everything shifts by one, nothing moved.
    const inserted = [question('x', 0), question('a', 1, { updatedAt: 't9' }), question('b', 2), question('c', 3)];
    assert.deepEqual(diffList(before, inserted, 'questions'), { added: 1, removed: 0, changed: 0, moved: 0 });
    // Move c to the front: one item moved, not three.
    const reordered = [question('c', 0), question('a', 1), question('b', 2)];
    assert.deepEqual(diffList(before, reordered, 'questions'), { added: 0, removed: 0, changed: 0, moved: 1 });
    // A question put into a section moved; a new text changed it.
    const edited = [question('a', 0, { sectionId: 's1' }), question('b', 1, { questionText: 'New' }), question('c', 2)];
    assert.deepEqual(diffList(before, edited, 'questions'), { added: 0, removed: 0, changed: 1, moved: 1 });
    // Option objects compare by content, not by key order.
    const opts = [question('a', 0, { options: { min: 1, max: 2 } })];
    assert.deepEqual(diffList(opts, [question('a', 0, { options: { max: 2, min: 1 } })], 'questions'), { added: 0, removed: 0, changed: 0, moved: 0 });
  });

  it('document fields: a new box moves a field, other attributes change it', () => {
    const before = doc([field('f1', 0), field('f2', 1), field('f3', 2)]);
    const after = doc([field('f1', 0, { x: 0.5 }), field('f2', 1, { pageNumber: 2 }), field('f3', 2, { label: 'Name' }), field('f4', 3), field('f5', 4), field('f6', 5)]);
    assert.equal(summarize(diffDocuments(before, after)), '+3 fields, 1 field changed, 2 fields moved');
    assert.equal(summarize(diffDocuments(before, doc(before.fields, 'Renamed'))), 'title changed');
  });

  it('form attributes: title, description and settings (by content)', () => {
    const before = form({ form: { title: 'A', description: null, settings: { theme: 'dark', lang: 'en' } } });
    assert.ok(isEmptyDiff(diffForms(before, form({ form: { title: 'A', description: null, settings: { lang: 'en', theme: 'dark' } } }))));
    const after = form({ form: { title: 'B', description: 'd', settings: { theme: 'light', lang: 'en' } } });
    assert.equal(summarize(diffForms(before, after)), 'title changed, description changed, settings changed');
  });

  it('the first revision says so', () => {
    assert.equal(summarize(diffForms(null, form()), true), 'First version');
    assert.equal(summarize(diffForms(null, form({ questions: [question('a', 0)], rules: [item('r', 0)] })), true), 'First version: +1 question, +1 rule');
    assert.equal(summarize(diffDocuments(null, doc([field('f', 0), field('g', 1)])), true), 'First version: +2 fields');
  });

  it('the definition hash is equal exactly when the diff is empty, for every list and attribute', () => {
    // Random lists from a small pool of ids and attribute values, in random orders, so that equal,
    // changed, moved, added and removed items all occur often.
    const list = (make: (id: string, order: number, extra: Record<string, unknown>) => SnapshotItem, attributes: fc.Arbitrary<Record<string, unknown>>) =>
      fc
        .uniqueArray(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd'), extra: attributes }), { selector: (x) => x.id, maxLength: 4 })
        .map((items) => items.map((x, order) => make(x.id, order, { ...x.extra, updatedAt: `t${order}` })));
    const questions = list(question, fc.record({ questionText: fc.constantFrom('x', 'y'), sectionId: fc.constantFrom(null, 's'), options: fc.constantFrom({}, { min: 1, max: 2 }, { max: 2, min: 1 }) }));
    const sections = list(item, fc.record({ title: fc.constantFrom('S', 'T') }));
    const rules = list(item, fc.record({ action: fc.constantFrom('show', 'hide'), conditions: fc.constantFrom([{ sourceQuestionId: 'a', operator: 'is_empty', value: null }], []) }));
    const fields = list(field, fc.record({ label: fc.constantFrom('L', 'M'), x: fc.constantFrom(0.1, 0.2), pageNumber: fc.constantFrom(1, 2) }));
    const head = fc.record({ title: fc.constantFrom('T', 'U'), description: fc.constantFrom(null, 'd'), settings: fc.constantFrom({}, { a: 1, b: 2 }, { b: 2, a: 1 }, { a: 2 }) });
    const formDefinition = fc.record({ form: head, sections, questions, rules });
    fc.assert(
      fc.property(formDefinition, formDefinition, (before, after) => {
        const same = definitionHash(before) === definitionHash(after);
        assert.equal(same, isEmptyDiff(diffForms(before, after)), `${JSON.stringify(before)} → ${JSON.stringify(after)}`);
      }),
      { numRuns: 2000 },
    );
    const documentDefinition = fc.record({ document: fc.record({ title: fc.constantFrom('D', 'E'), sha256: fc.constantFrom('abc', 'def') }), fields });
    fc.assert(
      fc.property(documentDefinition, documentDefinition, (before, after) => {
        const same = definitionHash(before) === definitionHash(after);
        assert.equal(same, isEmptyDiff(diffDocuments(before, after)), `${JSON.stringify(before)} → ${JSON.stringify(after)}`);
      }),
      { numRuns: 2000 },
    );
  });

  it('canonical JSON sorts keys at every depth and drops undefined like JSON does', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: undefined } }), '{"a":{"d":[1,{"e":3,"f":2}]},"b":1}');
  });
});
