import { invalid } from './errors.js';
import { isCalendarDate } from './fields.js';
import { count, LIMITS, longerThan } from './limits.js';
import { isEmpty, scalarProblem } from './logic.js';
import { answerKind, choicesOf, type AnswerKind, type QuestionType } from './questions.js';

export interface AnswerQuestion {
  id: string;
  type: QuestionType;
  options: Record<string, unknown>;
}

/** A question with what checking its answers needs, worked out once. */
interface Prepared {
  question: AnswerQuestion;
  kind: AnswerKind;
  /** The choices of a choice question, as a set (`null` for other kinds). */
  choices: ReadonlySet<string> | null;
}

/** The questions of a form by id, prepared once per compiled form (see `checkAnswers`). */
export type AnswerQuestions = ReadonlyMap<string, Prepared>;

export function answerQuestions(questions: readonly AnswerQuestion[]): AnswerQuestions {
  return new Map(
    questions.map((q) => {
      const kind = answerKind(q.type, q.options);
      const choices = kind === 'choice' || kind === 'choices' || q.type === 'ranking' ? new Set(choicesOf(q.type, q.options)) : null;
      return [q.id, { question: q, kind, choices }];
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
    const problem = answerProblem(prepared, value);
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

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function answerProblem({ question: q, kind, choices: choiceSet }: Prepared, value: unknown): string | null {
  const o = q.options;
  switch (kind) {
    case 'none':
      return 'must be null: it collects no answer';
    case 'choice':
      // "Other" lets the answer be any text.
      if (o.allow_other === true) return typeof value === 'string' ? null : 'must be a string';
      return typeof value === 'string' && choiceSet!.has(value) ? null : scalarProblem(q, kind, value);
    case 'text':
    case 'number':
    case 'boolean':
    case 'date':
    case 'time':
      return scalarProblem(q, kind, value);
    case 'choices': {
      const choices = choiceSet!;
      if (!isStrings(value)) return 'must be an array of choices';
      if (value.length > choices.size) return 'must not hold more items than there are choices';
      if (value.some((v) => !choices.has(v))) return 'must hold only the choices';
      return new Set(value).size === value.length ? null : 'must not repeat a choice';
    }
    default:
      break;
  }
  switch (q.type) {
    case 'ranking': {
      const choices = choiceSet!;
      const ok = isStrings(value) && value.length <= choices.size && value.every((v) => choices.has(v)) && new Set(value).size === value.length;
      return ok ? null : 'must be an array of distinct choices in ranked order';
    }
    case 'matrix': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object of row → column';
      const rows = o.rows as string[];
      const columns = o.columns as string[];
      if (Object.keys(value).length > rows.length) return 'has more rows than the question';
      for (const [row, cell] of Object.entries(value)) {
        if (!rows.includes(row)) return `names the row "${row}", which is not one of the rows`;
        const cells = o.allow_multiple === true && Array.isArray(cell) ? cell : [cell];
        if (cells.length > columns.length) return `has more values for "${row}" than there are columns`;
        if (cells.some((c) => typeof c !== 'string' || !columns.includes(c))) return `has a value for "${row}" that is not one of the columns`;
      }
      return null;
    }
    case 'date_range': {
      const range = value as { start?: unknown; end?: unknown };
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object { start, end }';
      if (Object.keys(value).some((k) => k !== 'start' && k !== 'end')) return 'must have only start and end';
      if (typeof range.start !== 'string' || !isCalendarDate(range.start) || typeof range.end !== 'string' || !isCalendarDate(range.end)) return 'must have start and end dates YYYY-MM-DD';
      return range.start <= range.end ? null : 'must not end before it starts';
    }
    case 'address': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object of address lines';
      const fields = o.fields as string[];
      if (Object.keys(value).length > fields.length) return 'has more parts than the address';
      for (const [key, line] of Object.entries(value)) {
        if (!fields.includes(key)) return `has the part "${key}", which is not one of ${fields.join(', ')}`;
        if (typeof line !== 'string') return `has a part "${key}" that is not a string`;
      }
      return null;
    }
    case 'file_upload':
      return Array.isArray(value) && value.length <= (o.max_files as number) && isStrings(value) ? null : `must be an array of at most ${String(o.max_files)} file references`;
    case 'digital_signature':
    case 'initials':
      return typeof value === 'string' ? null : 'must be a string (the signature)';
    case 'payment':
      return typeof value === 'object' && !Array.isArray(value) ? null : 'must be an object (the payment)';
    default:
      return null;
  }
}
