import { v7 as uuidv7 } from 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A new time-ordered id (UUID v7). */
export function newId(): string {
  return uuidv7();
}

/** Whether `value` has the shape of an id; anything else in a path is simply "not found". */
export function isId(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}
