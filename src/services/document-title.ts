import { invalid } from '../domain/errors.js';

/** A document's title as given by a client: no control characters, not blank, at most 200 characters; trimmed. */
export function checkDocumentTitle(title: string | undefined): string | undefined {
  if (title === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(title)) throw invalid('title', 'must not contain control characters');
  const trimmed = title.trim();
  if (trimmed.length === 0) throw invalid('title', 'must not be blank');
  if ([...trimmed].length > 200) throw invalid('title', 'must be at most 200 characters long');
  return trimmed;
}
