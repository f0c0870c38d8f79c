import { invalid } from './errors.js';
import { count, LIMITS, longerThan } from './limits.js';
import { isEmpty } from './logic.js';
import { QUESTION_TYPE_SPECS, type QuestionTypeSpec } from './question-types.js';
import type { QuestionType } from './questions.js';

export interface AnswerQuestion {
  id: string;
  type: QuestionType;
  options: Record<string, unknown>;
}

/** A question with what checking its answers needs, worked out once. */
interface Prepared {
  question: AnswerQuestion;
  spec: QuestionTypeSpec;
  /** The choices of a choice question, as a set (`null` for other types). */
  choices: ReadonlySet<string> | null;
}

/** The questions of a form by id, prepared once per compiled form (see `checkAnswers`). */
export type AnswerQuestions = ReadonlyMap<string, Prepared>;

export function answerQuestions(questions: readonly AnswerQuestion[]): AnswerQuestions {
  return new Map(
    questions.map((q) => {
      const spec = QUESTION_TYPE_SPECS[q.type];
      const choices = spec.choices(q.options);
      return [q.id, { question: q, spec, choices: choices === null ? null : new Set(choices) }];
    }),
  );
}

/**
 * Checks answers against the questions of a form: every key is a question of the form, every
 * value has the question's shape, and no text is longer than the limits (one text at most
 * `LIMITS.answerTextLength` characters, all together at most `LIMITS.answersTextLength`), so an
 * evaluation's work is bounded whatever the body holds. An empty answer (`null`, `""`, white
 * space, `[]`) is always allowed: it is no answer. Throws a 400 naming the answer
 * (`answers.<question id>`).
 */
export function checkAnswers(byId: AnswerQuestions, answers: Record<string, unknown>): void {
  let total = 0;
  for (const [id, value] of Object.entries(answers)) {
    const at = `answers.${id.length > 100 ? `${id.slice(0, 100)}…` : id}`;
    const prepared = byId.get(id);
    if (!prepared) throw invalid(at, 'is not a question of this form');
    total += textLength(value, at);
    if (total > LIMITS.answersTextLength) {
      throw invalid('answers', `hold more than ${count(LIMITS.answersTextLength)} characters of text together (UTF-16 units: the limit of one evaluation); send less text`);
    }
    // An empty answer (null, "", white space, []) is no answer, for every type.
    if (isEmpty(value)) continue;
    const problem = prepared.spec.answerProblem(value, prepared.question.options, prepared.choices);
    if (problem) throw invalid(at, `${problem} for a ${prepared.question.type} question`);
  }
}

/**
 * Text in an answer (strings at any depth: an address's lines, a matrix's cells…) in UTF-16
 * units; a 400 naming the answer when one text is over the limit. Bodies are at most 32 levels deep.
 */
function textLength(value: unknown, at: string): number {
  if (typeof value === 'string') {
    const limit = LIMITS.answerTextLength;
    if (longerThan(value, limit)) throw invalid(at, `must be at most ${count(limit)} characters long (the longest text answer)`);
    // The total is counted in UTF-16 units (an emoji counts two): a bound of the work, not a
    // count shown to anyone, and no text is scanned for it.
    return value.length;
  }
  if (value === null || typeof value !== 'object') return 0;
  let sum = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) sum += textLength(item, at);
  return sum;
}
