import { notFound } from '../domain/errors.js';
import { isId } from '../domain/ids.js';

/**
 * An id from the path: anything that is not one of our ids names nothing, so it is `404` with the
 * kind ("Form not found"), as an id that exists nowhere or in another workspace.
 */
export function pathId(kind: string, id: string): string {
  if (!isId(id)) throw notFound(kind);
  return id;
}

export const documentId = (id: string): string => pathId('Document', id);
