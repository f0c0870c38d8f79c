/** Question types of forms (API.md, Questions) and how rules and answers treat each. */
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

export function answerKind(type: QuestionType, options: Record<string, unknown> = {}): AnswerKind {
  switch (type) {
    case 'short_text':
    case 'long_text':
    case 'email':
    case 'phone':
    case 'url':
      return 'text';
    case 'number':
    case 'currency':
    case 'slider':
    case 'rating':
    case 'opinion_scale':
    case 'calculation':
      return 'number';
    case 'mcq':
    case 'dropdown':
      return 'choice';
    case 'multi_select':
      return 'choices';
    case 'picture_choice':
      return options.allow_multiple === true ? 'choices' : 'choice';
    case 'yes_no':
    case 'checkbox':
      return 'boolean';
    case 'date':
      return 'date';
    case 'time':
      return 'time';
    case 'heading':
    case 'divider':
      return 'none';
    default:
      return 'structured';
  }
}

/** The list a choice question's answers come from (`choices`, or the labels of `picture_choices`). */
export function choicesOf(type: QuestionType, options: Record<string, unknown>): string[] {
  if (type === 'picture_choice') {
    return ((options.picture_choices as Array<{ label: string }> | undefined) ?? []).map((c) => c.label);
  }
  return (options.choices as string[] | undefined) ?? [];
}
