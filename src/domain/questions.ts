/** Question types of forms (API.md, Questions); each type's descriptor is in question-types.ts. */
export const QUESTION_TYPES = [
  'short_text', 'long_text', 'email', 'phone', 'url', 'mcq', 'multi_select', 'dropdown', 'yes_no', 'checkbox',
  'picture_choice', 'ranking', 'matrix', 'rating', 'opinion_scale', 'slider', 'number', 'currency', 'calculation',
  'date', 'time', 'date_range', 'address', 'file_upload', 'digital_signature', 'initials', 'payment', 'heading', 'divider',
] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

export const PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
export type Priority = (typeof PRIORITIES)[number];

/**
 * What kind of value a question's answer is, for rules and for checking answers:
 * `text` strings, `number`s, one `choice` of a list, several `choices`, a `boolean`, a `date`
 * (YYYY-MM-DD) or a `time` (HH:MM), `structured` values (only emptiness can be tested), or `none`
 * (headings and dividers collect no answer).
 */
export type AnswerKind = 'text' | 'number' | 'choice' | 'choices' | 'boolean' | 'date' | 'time' | 'structured' | 'none';

// What each type takes and how its answers are checked: one descriptor per type, in question-types.ts.
