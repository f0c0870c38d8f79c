/**
 * Contractual limits of forms and answers (README, "Limits"; why these numbers: docs/decisions.md).
 * They keep every request on a form, however large the form, within tens of milliseconds of
 * work on the event loop and bounded memory: the largest allowed form reads, compiles and
 * serialises quickly, and an evaluation costs at most (conditions × answer length) once.
 */
/** Bytes of a form's `settings` as JSON (API.md, Forms). */
export const SETTINGS_MAX_BYTES = 64 * 1024;

export const LIMITS = {
  /** Questions in one form. */
  questionsPerForm: 2000,
  /** Sections in one form. */
  sectionsPerForm: 200,
  /** Rules in one form. */
  rulesPerForm: 2000,
  /** Conditions in one rule. */
  conditionsPerRule: 20,
  /** Conditions of all the rules of one form together. */
  conditionsPerForm: 5000,
  /** `contains` / `not_contains` conditions on text questions in one form (each reads its whole answer). */
  textSearchesPerForm: 100,
  /** Characters of a text value in a condition (`value`, or an item of `is_any_of`). */
  conditionTextLength: 1000,
  /** One question as the API returns it, as JSON (UTF-8 bytes). */
  questionBytes: 64 * 1024,
  /** A form's content: see `formBytes` in src/store/form-content.ts (UTF-8 bytes). */
  formBytes: 2 * 1024 * 1024,
  /** Characters of one text in an answer (a text answer, an "other" choice, an address line…). */
  answerTextLength: 10_000,
  /** Characters of text in all the answers of one evaluation together, in UTF-16 units (an emoji counts two). */
  answersTextLength: 256 * 1024,
} as const;

/** `1234567` → `1,234,567`, for hints. */
export const count = (n: number): string => n.toLocaleString('en-US');

/** Characters (code points) of `text`, counted without copying it. */
function characters(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) n--;
  }
  return n;
}

/**
 * Whether `text` has more than `limit` characters. A code point is one or two UTF-16 units, so
 * most texts need no counting, and a text of more than twice the limit in units is over it
 * whatever it holds: a megabyte sent where 1,000 characters are allowed is never scanned (nor
 * spread into an array of a million strings).
 */
export function longerThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false;
  if (text.length > 2 * limit) return true;
  return characters(text) > limit;
}
