import { invalid } from './errors.js';
import { isCalendarDate } from './fields.js';
import { isEmpty, scalarProblem } from './logic.js';
import { answerKind, choicesOf, type QuestionType } from './questions.js';

export interface AnswerQuestion {
  id: string;
  type: QuestionType;
  options: Record<string, unknown>;
}

/**
 * Checks answers against the questions of a form: every key is a question of the form and every
 * value has the question's shape. An empty answer (`null`, `""`, white space, `[]`) is always
 * allowed: it is no answer. Throws a 400 naming the
 * answer (`answers.<question id>`).
 */
export function checkAnswers(questions: readonly AnswerQuestion[], answers: Record<string, unknown>): void {
  const byId = new Map(questions.map((q) => [q.id, q]));
  for (const [id, value] of Object.entries(answers)) {
    const at = `answers.${id.length > 100 ? `${id.slice(0, 100)}…` : id}`;
    const question = byId.get(id);
    if (!question) throw invalid(at, 'is not a question of this form');
    // An empty answer (null, "", white space, []) is no answer, for every type.
    if (isEmpty(value)) continue;
    const problem = answerProblem(question, value);
    if (problem) throw invalid(at, `${problem} for a ${question.type} question`);
  }
}

function answerProblem(q: AnswerQuestion, value: unknown): string | null {
  const o = q.options;
  const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const kind = answerKind(q.type, o);
  switch (kind) {
    case 'none':
      return 'must be null: it collects no answer';
    case 'choice':
      // "Other" lets the answer be any text.
      if (o.allow_other === true) return typeof value === 'string' ? null : 'must be a string';
      return scalarProblem(q, kind, value);
    case 'text':
    case 'number':
    case 'boolean':
    case 'date':
    case 'time':
      return scalarProblem(q, kind, value);
    case 'choices': {
      const choices = new Set(choicesOf(q.type, o));
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
      const choices = new Set(choicesOf(q.type, o));
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
