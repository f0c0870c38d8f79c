import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compileLogic,
  conditionHolds,
  evaluateLogic,
  findCycle,
  valueProblem,
  type Condition,
  type LogicForm,
  type LogicQuestion,
  type LogicRule,
} from '../../src/domain/logic.js';
import type { QuestionType } from '../../src/domain/questions.js';

const question = (id: string, type: QuestionType = 'short_text', extra: Partial<LogicQuestion> = {}): LogicQuestion => ({
  id, type, sectionId: null, isRequired: false, options: {}, ...extra,
});
const rule = (id: string, action: 'show' | 'hide', target: string, conditions: Condition[], match: 'all' | 'any' = 'all', section = false): LogicRule => ({
  id, action, targetQuestionId: section ? null : target, targetSectionId: section ? target : null, match, conditions,
});
const evaluate = (form: LogicForm, answers: Record<string, unknown>) => evaluateLogic(compileLogic(form), answers);

describe('conditions', () => {
  it('treat empty answers as the contract says', () => {
    for (const empty of [undefined, null, '', '   ', []]) {
      assert.equal(conditionHolds('text', 'is_empty', undefined, empty), true);
      assert.equal(conditionHolds('text', 'is_not_empty', undefined, empty), false);
      assert.equal(conditionHolds('text', 'not_equals', 'x', empty), true);
      assert.equal(conditionHolds('text', 'not_contains', 'x', empty), true);
      for (const op of ['equals', 'contains', 'is_any_of'] as const) assert.equal(conditionHolds('text', op, op === 'is_any_of' ? ['x'] : 'x', empty), false);
      for (const op of ['greater_than', 'greater_or_equal', 'less_than', 'less_or_equal'] as const) assert.equal(conditionHolds('number', op, 0, empty), false);
    }
  });

  it('compare text, numbers, choices, booleans and dates', () => {
    assert.equal(conditionHolds('text', 'contains', 'ACME', 'we are acme corp'), true, 'contains ignores case');
    assert.equal(conditionHolds('text', 'equals', 'ACME', 'acme'), false, 'equals does not');
    assert.equal(conditionHolds('choices', 'contains', 'b', ['a', 'b']), true);
    assert.equal(conditionHolds('choices', 'not_contains', 'c', ['a', 'b']), true);
    // Membership of a choice as written: capitals in a choice do not stop it from matching.
    assert.equal(conditionHolds('choices', 'contains', 'Red', ['Red', 'blue']), true);
    assert.equal(conditionHolds('choices', 'not_contains', 'Red', ['Red']), false);
    assert.equal(conditionHolds('choices', 'contains', 'Red', ['blue']), false);
    assert.equal(conditionHolds('choices', 'is_any_of', ['c', 'b'], ['a', 'b']), true);
    assert.equal(conditionHolds('number', 'greater_than', 18, 21), true);
    assert.equal(conditionHolds('number', 'less_or_equal', 18, 18), true);
    assert.equal(conditionHolds('number', 'is_any_of', [1, 2], 3), false);
    assert.equal(conditionHolds('boolean', 'equals', false, false), true);
    assert.equal(conditionHolds('date', 'greater_than', '2026-01-31', '2026-02-01'), true);
    assert.equal(conditionHolds('time', 'less_than', '09:30', '09:05'), true);
  });

  it('check that operator and value fit the source question', () => {
    const mcq = question('m', 'mcq', { options: { choices: ['Yes', 'No'] } });
    assert.equal(valueProblem(mcq, 'equals', 'Yes'), null);
    assert.match(valueProblem(mcq, 'equals', 'Maybe')!, /must be one of the choices/);
    assert.match(valueProblem(mcq, 'greater_than', 'Yes')!, /operator greater_than does not fit a mcq question/);
    assert.match(valueProblem(mcq, 'is_any_of', [])!, /non-empty array/);
    assert.equal(valueProblem(question('n', 'number'), 'greater_than', 3), null);
    assert.match(valueProblem(question('n', 'number'), 'greater_than', '3')!, /must be a number/);
    assert.match(valueProblem(question('d', 'date'), 'equals', '2026-02-30')!, /must be a date/);
    assert.match(valueProblem(question('h', 'heading'), 'is_empty', undefined)!, /collects no answer/);
    assert.match(valueProblem(question('t'), 'is_empty', 'x')!, /takes no value/);
    assert.match(valueProblem(question('a', 'address'), 'equals', 'x')!, /does not fit/);
    assert.equal(valueProblem(question('y', 'yes_no'), 'equals', true), null);
  });
});

describe('evaluation', () => {
  it('applies show and hide rules, hidden sections, and cascades hidden answers as empty', () => {
    const form: LogicForm = {
      sections: [{ id: 'S' }],
      questions: [
        question('has_company', 'yes_no'),
        question('company', 'short_text', { isRequired: true }),
        question('vat', 'short_text', { sectionId: 'S', isRequired: true }),
        question('note', 'long_text', { isRequired: true }),
      ],
      rules: [
        rule('r1', 'show', 'company', [{ sourceQuestionId: 'has_company', operator: 'equals', value: true }]),
        rule('r2', 'show', 'S', [{ sourceQuestionId: 'company', operator: 'is_not_empty' }], 'all', true),
        rule('r3', 'hide', 'note', [{ sourceQuestionId: 'vat', operator: 'is_not_empty' }]),
      ],
    };
    assert.deepEqual(evaluate(form, { has_company: true, company: 'ACME', vat: 'DE1' }), {
      visibleQuestionIds: ['has_company', 'company', 'vat'],
      hiddenQuestionIds: ['note'],
      visibleSectionIds: ['S'],
      hiddenSectionIds: [],
      missingRequiredQuestionIds: [],
    });
    // Company hidden → its answer counts as empty → section hidden → vat hidden → note shows.
    assert.deepEqual(evaluate(form, { has_company: false, company: 'ACME', vat: 'DE1' }), {
      visibleQuestionIds: ['has_company', 'note'],
      hiddenQuestionIds: ['company', 'vat'],
      visibleSectionIds: [],
      hiddenSectionIds: ['S'],
      missingRequiredQuestionIds: ['note'],
    });
  });

  it('contains on a multi_select or a picture choice of several answers is membership of the choice as written', () => {
    const form: LogicForm = {
      sections: [],
      questions: [
        question('colours', 'multi_select', { options: { choices: ['Red', 'blue'] } }),
        question('pictures', 'picture_choice', { options: { picture_choices: [{ label: 'Red' }, { label: 'blue' }], allow_multiple: true } }),
        question('t1'),
        question('t2'),
        question('t3'),
      ],
      rules: [
        rule('r1', 'show', 't1', [{ sourceQuestionId: 'colours', operator: 'contains', value: 'Red' }]),
        rule('r2', 'show', 't2', [{ sourceQuestionId: 'pictures', operator: 'contains', value: 'Red' }]),
        rule('r3', 'show', 't3', [{ sourceQuestionId: 'colours', operator: 'not_contains', value: 'Red' }]),
      ],
    };
    assert.deepEqual(evaluate(form, { colours: ['Red'], pictures: ['blue', 'Red'] }).visibleQuestionIds, ['colours', 'pictures', 't1', 't2']);
    assert.deepEqual(evaluate(form, { colours: ['blue'], pictures: ['blue'] }).visibleQuestionIds, ['colours', 'pictures', 't3']);
  });

  it('needs one show rule to hold; match any/all', () => {
    const form: LogicForm = {
      sections: [],
      questions: [question('a', 'number'), question('b', 'number'), question('t')],
      rules: [
        rule('r1', 'show', 't', [{ sourceQuestionId: 'a', operator: 'greater_than', value: 5 }, { sourceQuestionId: 'b', operator: 'greater_than', value: 5 }], 'all'),
        rule('r2', 'show', 't', [{ sourceQuestionId: 'a', operator: 'equals', value: 1 }, { sourceQuestionId: 'b', operator: 'equals', value: 1 }], 'any'),
      ],
    };
    const shown = (answers: Record<string, unknown>) => evaluate(form, answers).visibleQuestionIds.includes('t');
    assert.equal(shown({ a: 6, b: 6 }), true);
    assert.equal(shown({ a: 6, b: 2 }), false);
    assert.equal(shown({ a: 9, b: 1 }), true);
    assert.equal(shown({}), false);
  });
});

describe('contains on text: each answer folded once per evaluation', () => {
  it('decides as conditionHolds does for every condition, whatever reads the answer first, hidden sources empty', () => {
    const texts = ['İstanbul', 'ISTANBUL', 'i̇stanbul', 'Straße', 'STRASSE', 'ΣΟΦΙΑ σοφια', '', '   ', 'acme', 'ACME corp'];
    const needles = ['i̇', 'İ', 'ist', 'ß', 'ss', 'σοφ', 'ΣΟΦ', 'acme', 'x', ' '];
    fc.assert(
      fc.property(
        fc.array(fc.record({ source: fc.nat(2), needle: fc.constantFrom(...needles), negate: fc.boolean() }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.constantFrom(...texts), { minLength: 3, maxLength: 3 }),
        fc.boolean(),
        (conditions, answerTexts, hideFirst) => {
          // q0..q2 are sources; each condition shows its own target; q0 may be hidden by q9, so
          // its answer counts as empty in every condition that reads it.
          const questions = [...[0, 1, 2].map((i) => question(`q${i}`, 'long_text')), ...conditions.map((_, i) => question(`t${i}`)), question('q9', 'yes_no')];
          const rules = conditions.map((c, i) => rule(`r${i}`, 'show', `t${i}`, [{ sourceQuestionId: `q${c.source}`, operator: c.negate ? 'not_contains' : 'contains', value: c.needle }]));
          rules.push(rule('h', 'hide', 'q0', [{ sourceQuestionId: 'q9', operator: 'equals', value: true }]));
          const answers: Record<string, unknown> = { q0: answerTexts[0], q1: answerTexts[1], q2: answerTexts[2], q9: hideFirst };
          const result = evaluate({ sections: [], questions, rules }, answers);
          conditions.forEach((c, i) => {
            const answer = c.source === 0 && hideFirst ? undefined : answers[`q${c.source}`];
            const expected = conditionHolds('text', c.negate ? 'not_contains' : 'contains', c.needle, answer);
            assert.equal(result.visibleQuestionIds.includes(`t${i}`), expected, JSON.stringify({ c, answer }));
          });
        },
      ),
    );
  });

  it('is String.prototype.toLowerCase on both sides, as before', () => {
    const before = (answer: string, needle: string) => answer.toLowerCase().includes(needle.toLowerCase());
    for (const [answer, needle] of [['İSTANBUL', 'i̇stanbul'], ['istanbul', 'İstanbul'], ['STRASSE', 'straße'], ['ΣΟΦΙΑ', 'σοφια'], ['x'.repeat(10_000), 'XX']]) {
      assert.equal(conditionHolds('text', 'contains', needle, answer), before(answer!, needle!), `${answer!.slice(0, 10)} / ${needle}`);
    }
  });
});

describe('cycles', () => {
  it('finds a loop through rules and through the section holding a source, and names it', () => {
    const direct: LogicForm = {
      sections: [],
      questions: [question('a'), question('b')],
      rules: [rule('r1', 'show', 'b', [{ sourceQuestionId: 'a', operator: 'is_not_empty' }]), rule('r2', 'hide', 'a', [{ sourceQuestionId: 'b', operator: 'is_empty' }])],
    };
    assert.deepEqual(findCycle(direct), ['q:a', 'q:b', 'q:a']);
    const self: LogicForm = { sections: [], questions: [question('a')], rules: [rule('r', 'hide', 'a', [{ sourceQuestionId: 'a', operator: 'is_empty' }])] };
    assert.deepEqual(findCycle(self), ['q:a', 'q:a']);
    const viaSection: LogicForm = {
      sections: [{ id: 'S' }],
      questions: [question('a', 'short_text', { sectionId: 'S' })],
      rules: [rule('r', 'show', 'S', [{ sourceQuestionId: 'a', operator: 'is_not_empty' }], 'all', true)],
    };
    assert.deepEqual(findCycle(viaSection), ['s:S', 'q:a', 's:S']);
    assert.throws(() => compileLogic(viaSection), /loop/);
  });
});

// ---- properties -------------------------------------------------------------------------------

const TYPES: QuestionType[] = ['short_text', 'number', 'yes_no', 'mcq', 'multi_select', 'date'];

/**
 * Random forms whose rules are acyclic by construction: every question has a rank, a section sits
 * just before its first question, and every rule's sources rank below its target.
 */
const acyclicForm = fc
  .record({
    types: fc.array(fc.constantFrom(...TYPES), { minLength: 2, maxLength: 14 }),
    sectionOf: fc.array(fc.integer({ min: -1, max: 2 }), { minLength: 14, maxLength: 14 }),
    required: fc.array(fc.boolean(), { minLength: 14, maxLength: 14 }),
    rules: fc.array(
      fc.record({
        target: fc.nat(),
        toSection: fc.boolean(),
        action: fc.constantFrom('show' as const, 'hide' as const),
        match: fc.constantFrom('all' as const, 'any' as const),
        sources: fc.array(fc.record({ pick: fc.nat(), op: fc.nat(), value: fc.nat() }), { minLength: 1, maxLength: 3 }),
      }),
      { maxLength: 20 },
    ),
  })
  .map(({ types, sectionOf, required, rules }) => {
    const questions: LogicQuestion[] = types.map((type, i) =>
      question(`q${i}`, type, {
        sectionId: sectionOf[i]! >= 0 ? `s${sectionOf[i]}` : null,
        isRequired: required[i]!,
        options: type === 'mcq' || type === 'multi_select' ? { choices: ['a', 'b', 'c'] } : {},
      }),
    );
    const sections = [...new Set(questions.map((x) => x.sectionId).filter((x): x is string => x !== null))].map((id) => ({ id }));
    const rank = (id: string) => questions.findIndex((x) => x.id === id);
    const sectionRank = (id: string) => Math.min(...questions.filter((x) => x.sectionId === id).map((x) => rank(x.id))) - 0.5;
    // A question's effective rank is limited by its section too (a member depends on its section).
    const built: LogicRule[] = [];
    rules.forEach((r, i) => {
      const toSection = r.toSection && sections.length > 0;
      const target = toSection ? sections[r.target % sections.length]!.id : questions[r.target % questions.length]!.id;
      const limit = toSection ? sectionRank(target) : rank(target);
      const candidates = questions.filter((x) => rank(x.id) < limit && (x.sectionId === null || sectionRank(x.sectionId) < limit));
      if (candidates.length === 0) return;
      const conditions = r.sources.map((c) => {
        const source = candidates[c.pick % candidates.length]!;
        return conditionFor(source, c.op, c.value);
      });
      built.push(rule(`r${i}`, r.action, target, conditions, r.match, toSection));
    });
    return { sections, questions, rules: built } satisfies LogicForm;
  });

function conditionFor(source: LogicQuestion, op: number, value: number): Condition {
  const id = source.id;
  switch (source.type) {
    case 'number':
      return { sourceQuestionId: id, ...[{ operator: 'greater_than', value }, { operator: 'equals', value: value % 3 }, { operator: 'is_empty' }][op % 3]! } as Condition;
    case 'yes_no':
      return { sourceQuestionId: id, operator: 'equals', value: value % 2 === 0 };
    case 'mcq':
      return { sourceQuestionId: id, operator: op % 2 ? 'equals' : 'is_any_of', value: op % 2 ? 'abc'[value % 3] : ['a', 'b'] } as Condition;
    case 'multi_select':
      return { sourceQuestionId: id, operator: op % 2 ? 'contains' : 'not_contains', value: 'abc'[value % 3] } as Condition;
    case 'date':
      return { sourceQuestionId: id, operator: 'less_than', value: `2026-0${1 + (value % 9)}-15` };
    default:
      return { sourceQuestionId: id, ...[{ operator: 'contains', value: 'x' }, { operator: 'is_not_empty' }, { operator: 'not_equals', value: 'y' }][op % 3]! } as Condition;
  }
}

const answerFor = (type: QuestionType): fc.Arbitrary<unknown> => {
  switch (type) {
    case 'number':
      return fc.option(fc.integer({ min: -5, max: 10 }), { nil: undefined });
    case 'yes_no':
      return fc.option(fc.boolean(), { nil: undefined });
    case 'mcq':
      return fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined });
    case 'multi_select':
      return fc.subarray(['a', 'b', 'c']);
    case 'date':
      return fc.option(fc.constantFrom('2026-01-01', '2026-05-05', '2026-09-30'), { nil: undefined });
    default:
      return fc.option(fc.constantFrom('', ' ', 'x', 'y', 'xyz'), { nil: undefined });
  }
};

const formWithAnswers = acyclicForm.chain((form) =>
  fc.tuple(fc.constant(form), fc.tuple(...form.questions.map((x) => answerFor(x.type))), fc.nat()),
).map(([form, values, seed]) => ({
  form,
  answers: Object.fromEntries(form.questions.map((x, i) => [x.id, values[i]])) as Record<string, unknown>,
  seed,
}));

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let state = seed + 1;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('engine properties', () => {
  it('random acyclic forms: no cycle is reported, evaluation terminates, is deterministic and does not depend on rule order', () => {
    fc.assert(
      fc.property(formWithAnswers, ({ form, answers, seed }) => {
        assert.equal(findCycle(form), null);
        const first = evaluate(form, answers);
        assert.deepEqual(evaluate(form, answers), first);
        assert.deepEqual(evaluate({ ...form, rules: shuffled(form.rules, seed) }, answers), first);
        // Every question and section is in exactly one list; missing required ones are visible.
        assert.equal(first.visibleQuestionIds.length + first.hiddenQuestionIds.length, form.questions.length);
        assert.equal(first.visibleSectionIds.length + first.hiddenSectionIds.length, form.sections.length);
        for (const id of first.missingRequiredQuestionIds) assert.ok(first.visibleQuestionIds.includes(id));
      }),
      { numRuns: 300 },
    );
  });

  it('when every rule holds, the visible questions are exactly those no hide rule targets', () => {
    // Sources are answered and never targets; conditions are is_not_empty: all rules hold.
    const arb = fc.record({ sources: fc.integer({ min: 1, max: 5 }), targets: fc.integer({ min: 1, max: 8 }), rules: fc.array(fc.record({ t: fc.nat(), s: fc.nat(), hide: fc.boolean() }), { maxLength: 15 }) });
    fc.assert(
      fc.property(arb, ({ sources, targets, rules }) => {
        const questions = [...Array.from({ length: sources }, (_, i) => question(`src${i}`)), ...Array.from({ length: targets }, (_, i) => question(`t${i}`))];
        const built = rules.map((r, i) => rule(`r${i}`, r.hide ? 'hide' : 'show', `t${r.t % targets}`, [{ sourceQuestionId: `src${r.s % sources}`, operator: 'is_not_empty' }]));
        const answers = Object.fromEntries(questions.filter((x) => x.id.startsWith('src')).map((x) => [x.id, 'answered']));
        const result = evaluate({ sections: [], questions, rules: built }, answers);
        const hideTargets = new Set(built.filter((r) => r.action === 'hide').map((r) => r.targetQuestionId));
        assert.deepEqual(result.visibleQuestionIds, questions.map((x) => x.id).filter((id) => !hideTargets.has(id)));
        for (const r of built.filter((x) => x.action === 'show' && !hideTargets.has(x.targetQuestionId))) assert.ok(result.visibleQuestionIds.includes(r.targetQuestionId!));
      }),
      { numRuns: 300 },
    );
  });

  it('adding a rule that closes a loop is always found', () => {
    fc.assert(
      fc.property(acyclicForm, fc.nat(), (form, pick) => {
        fc.pre(form.rules.length > 0);
        // Follow the rule back: its target depends on its source, so a rule from the target (or a
        // question of the target section) to the source closes a loop.
        const existing = form.rules[pick % form.rules.length]!;
        const source = existing.conditions[0]!.sourceQuestionId;
        const from = existing.targetQuestionId ?? form.questions.find((x) => x.sectionId === existing.targetSectionId)!.id;
        const closing = rule('closing', 'hide', source, [{ sourceQuestionId: from, operator: 'is_empty' }]);
        const cycle = findCycle({ ...form, rules: [...form.rules, closing] });
        assert.ok(cycle, 'a loop is reported');
        assert.equal(cycle[0], cycle[cycle.length - 1]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('calculations', () => {
  const calc = (id: string, formula: string, extra: Partial<LogicQuestion> = {}) => question(id, 'calculation', { options: { formula, decimal_places: 2 }, ...extra });

  it('compute from the answers they refer to, by id or by text, rounded to their decimal places', () => {
    const form: LogicForm = {
      sections: [],
      questions: [question('a', 'number', { questionText: 'Apples' }), question('b', 'number'), calc('t', '({{Apples}} + {{b}}) / 3'), question('big', 'short_text')],
      rules: [rule('r', 'show', 'big', [{ sourceQuestionId: 't', operator: 'equals', value: 3.33 }])],
    };
    assert.deepEqual(evaluate(form, { a: 4, b: 6 }).hiddenQuestionIds, [], '10 / 3 is 3.33 at 2 decimal places');
    assert.deepEqual(evaluate(form, { a: 4 }).hiddenQuestionIds, ['big'], 'an empty reference counts as 0: 4 / 3 = 1.33');
  });

  it('are empty when every reference is empty, or when dividing by zero', () => {
    const form: LogicForm = {
      sections: [],
      questions: [question('a', 'number'), question('b', 'number'), calc('t', '{{a}} / {{b}}', { isRequired: true })],
      rules: [],
    };
    assert.deepEqual(evaluate(form, {}).missingRequiredQuestionIds, ['t']);
    assert.deepEqual(evaluate(form, { a: 1, b: 0 }).missingRequiredQuestionIds, ['t']);
    assert.deepEqual(evaluate(form, { a: 1, b: 4 }).missingRequiredQuestionIds, []);
  });

  it('depend on what they refer to: a rule from a calculation to one of its references is a loop', () => {
    const form: LogicForm = {
      sections: [],
      questions: [question('a', 'number'), calc('t', '{{a}} * 2')],
      rules: [rule('r', 'hide', 'a', [{ sourceQuestionId: 't', operator: 'greater_than', value: 10 }])],
    };
    assert.deepEqual(findCycle(form), ['q:a', 'q:t', 'q:a']);
    assert.throws(() => compileLogic(form), /loop/);
  });
});
