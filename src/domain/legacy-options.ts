/**
 * Question options as earlier versions of the service stored them, mapped to today's shape.
 * Stored drafts were converted once by migration `0009_question_options`; revisions never change,
 * so their snapshots are mapped here each time they are read (served, evaluated, diffed).
 *
 * - `address`: `fields` over `line1`, `line2`, `city`, `region`, `postal_code`, `country` became
 *   `address_fields` over `street`, `street2`, `city`, `state`, `zip`, `country`.
 */
export const LEGACY_ADDRESS_FIELDS: Readonly<Record<string, string>> = {
  line1: 'street',
  line2: 'street2',
  city: 'city',
  region: 'state',
  postal_code: 'zip',
  country: 'country',
};

/** Today's options of a question of `type` stored as `options` (the same object when nothing is old). */
export function upgradeOptions(type: string, options: Record<string, unknown>): Record<string, unknown> {
  if (type !== 'address' || !Array.isArray(options.fields) || options.address_fields !== undefined) return options;
  const { fields, ...rest } = options;
  return { ...rest, address_fields: (fields as string[]).map((f) => LEGACY_ADDRESS_FIELDS[f] ?? f) };
}

interface SnapshotLike {
  questions?: Array<{ type: string; options: Record<string, unknown> }>;
}

/** A form snapshot with its questions' options in today's shape (the same object when nothing is old). */
export function upgradeFormSnapshot<T extends SnapshotLike>(snapshot: T): T {
  const questions = snapshot.questions;
  if (!questions?.some((q) => upgradeOptions(q.type, q.options) !== q.options)) return snapshot;
  return { ...snapshot, questions: questions.map((q) => ({ ...q, options: upgradeOptions(q.type, q.options) })) };
}

/**
 * A form snapshot's JSON text in today's shape: the text itself (byte for byte) unless it holds an
 * address question with old options, which only a snapshot published before 0009 can.
 */
export function upgradeFormSnapshotText(text: string): string {
  if (!text.includes('"type":"address"') || !text.includes('"fields":')) return text;
  const snapshot = JSON.parse(text) as SnapshotLike;
  const upgraded = upgradeFormSnapshot(snapshot);
  return upgraded === snapshot ? text : JSON.stringify(upgraded);
}
