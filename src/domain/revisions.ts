import { createHash } from 'node:crypto';

/**
 * Revisions: what a snapshot holds, what counts as a change between two of them, and the generated
 * `changesSummary` ("+2 questions, -1 section, 1 rule changed"). Pure: the store builds snapshots
 * and calls these.
 */

/** An item of an ordered list in a snapshot (a question, section, rule or field, as the API shows it). */
export interface SnapshotItem {
  id: string;
  order: number;
  [key: string]: unknown;
}

/** The parts of a form snapshot the diff reads (the `form` object and the three lists). */
export interface FormDefinition {
  form: { title: string; description: string | null; settings: Record<string, unknown> };
  sections: SnapshotItem[];
  questions: SnapshotItem[];
  rules: SnapshotItem[];
}

/** The parts of a document snapshot the diff reads. */
export interface DocumentDefinition {
  document: { title: string; sha256: string };
  fields: SnapshotItem[];
}

/** Keys that are bookkeeping, not definition: they never make a change by themselves. */
const BOOKKEEPING = new Set(['id', 'formId', 'documentId', 'order', 'createdAt', 'updatedAt']);

/** Per kind of item, keys whose change means the item moved rather than changed. */
const PLACEMENT: Record<string, readonly string[]> = {
  questions: ['sectionId'],
  sections: [],
  rules: [],
  fields: ['pageNumber', 'x', 'y', 'width', 'height'],
};

export interface ListDiff {
  added: number;
  removed: number;
  /** Items whose definition changed (text, type, options, conditions …). */
  changed: number;
  /** Items that moved: their place among the others changed, or (fields) their box, or (questions) their section. */
  moved: number;
}

export interface Diff {
  /** Top-level attributes that changed (`title`, `description`, `settings`), in that order. */
  attributes: string[];
  /** Per list, in the order the summary names them. */
  lists: Array<{ noun: [singular: string, plural: string]; diff: ListDiff }>;
}

/** JSON with object keys sorted, so that equal values have equal text whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // A list of plain values (choices, labels…) is the same text either way: the engine's own
  // JSON.stringify writes it many times faster than item by item (a large form's publish hashes
  // and diffs megabytes of these).
  if (Array.isArray(value)) return value.every(isPlain) ? JSON.stringify(value) : `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  let out = '';
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    out += `${out ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `{${out}}`;
}

/** A value JSON.stringify writes in an array exactly as `canonicalJson` does (not an object or array). */
const isPlain = (item: unknown): boolean => item === null || (typeof item !== 'object' && typeof item !== 'undefined');

/** An item's definition text (`definitionOf`), possibly worked out beforehand. */
export type DefinitionText = (item: SnapshotItem, kind: string) => string;

/**
 * The definition texts of many items worked out ahead, `pause` awaited every `every` items: the
 * canonical JSON of a large form is most of the work of publishing it, and this way it runs in
 * short turns of the event loop.
 */
export async function definitionTexts(
  lists: Array<[kind: string, items: readonly SnapshotItem[]]>,
  pause: () => Promise<void>,
  /** Asked for items not among `lists` (texts worked out before, of other items). */
  otherwise: DefinitionText = definitionOf,
  every = 200,
): Promise<DefinitionText> {
  const texts = new Map<SnapshotItem, string>();
  let n = 0;
  for (const [kind, items] of lists) {
    for (const item of items) {
      texts.set(item, definitionOf(item, kind));
      if (++n % every === 0) await pause();
    }
  }
  return (item, kind) => texts.get(item) ?? otherwise(item, kind);
}

/** The lists of a form definition, as `definitionTexts` takes them. */
export const formLists = (definition: FormDefinition): Array<[string, SnapshotItem[]]> => [
  ['sections', definition.sections],
  ['questions', definition.questions],
  ['rules', definition.rules],
];

/** The definition part of an item: every key but bookkeeping and placement, canonically. */
function definitionOf(item: SnapshotItem, kind: string): string {
  const placement = PLACEMENT[kind] ?? [];
  const kept: Record<string, unknown> = {};
  for (const key in item) if (!BOOKKEEPING.has(key) && !placement.includes(key)) kept[key] = item[key];
  return canonicalJson(kept);
}

function placementOf(item: SnapshotItem, kind: string): string {
  return canonicalJson((PLACEMENT[kind] ?? []).map((key) => item[key] ?? null));
}

/** How one ordered list changed from `before` to `after`, items matched by id. */
export function diffList(before: readonly SnapshotItem[], after: readonly SnapshotItem[], kind: string, define: DefinitionText = definitionOf): ListDiff {
  const old = new Map(before.map((item) => [item.id, item]));
  const kept = new Set<string>();
  let added = 0;
  let changed = 0;
  const movedIds = new Set<string>();
  const oldRanks: number[] = [];
  const keptIds: string[] = [];
  const byOrder = (a: SnapshotItem, b: SnapshotItem) => a.order - b.order;
  const oldRank = new Map([...before].sort(byOrder).map((item, rank) => [item.id, rank]));
  for (const item of [...after].sort(byOrder)) {
    const previous = old.get(item.id);
    if (!previous) {
      added++;
      continue;
    }
    kept.add(item.id);
    if (define(previous, kind) !== define(item, kind)) changed++;
    if (placementOf(previous, kind) !== placementOf(item, kind)) movedIds.add(item.id);
    oldRanks.push(oldRank.get(item.id)!);
    keptIds.push(item.id);
  }
  // Items outside the longest run that kept its relative order changed place among the others
  // (insertions and removals shift positions but move nothing).
  for (const id of outOfOrder(keptIds, oldRanks)) movedIds.add(id);
  return { added, removed: before.length - kept.size, changed, moved: movedIds.size };
}

/**
 * The ids not on one longest increasing run of `ranks` (parallel to `ids`): patience sorting with
 * back links, O(n log n), so the fewest items count as moved.
 */
function outOfOrder(ids: string[], ranks: number[]): string[] {
  const tails: number[] = []; // index into ranks of the smallest tail of each length
  const previous = new Int32Array(ranks.length).fill(-1);
  for (let i = 0; i < ranks.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ranks[tails[mid]!]! < ranks[i]!) lo = mid + 1;
      else hi = mid;
    }
    previous[i] = lo > 0 ? tails[lo - 1]! : -1;
    tails[lo] = i;
  }
  const onRun = new Set<number>();
  for (let i = tails.length ? tails[tails.length - 1]! : -1; i >= 0; i = previous[i]!) onRun.add(i);
  return ids.filter((_, i) => !onRun.has(i));
}

/** From `before` (null for the first revision) to `after`. */
export function diffForms(before: FormDefinition | null, after: FormDefinition, define: DefinitionText = definitionOf): Diff {
  const empty: FormDefinition = { form: { title: after.form.title, description: after.form.description, settings: after.form.settings }, sections: [], questions: [], rules: [] };
  const from = before ?? empty;
  const attributes: string[] = [];
  if (from.form.title !== after.form.title) attributes.push('title');
  if ((from.form.description ?? null) !== (after.form.description ?? null)) attributes.push('description');
  if (canonicalJson(from.form.settings) !== canonicalJson(after.form.settings)) attributes.push('settings');
  return {
    attributes,
    lists: [
      { noun: ['question', 'questions'], diff: diffList(from.questions, after.questions, 'questions', define) },
      { noun: ['section', 'sections'], diff: diffList(from.sections, after.sections, 'sections', define) },
      { noun: ['rule', 'rules'], diff: diffList(from.rules, after.rules, 'rules', define) },
    ],
  };
}

export function diffDocuments(before: DocumentDefinition | null, after: DocumentDefinition): Diff {
  const from = before ?? { document: after.document, fields: [] };
  const attributes: string[] = [];
  if (from.document.title !== after.document.title) attributes.push('title');
  if (from.document.sha256 !== after.document.sha256) attributes.push('file');
  return { attributes, lists: [{ noun: ['field', 'fields'], diff: diffList(from.fields, after.fields, 'fields') }] };
}

export function isEmptyDiff(diff: Diff): boolean {
  return diff.attributes.length === 0 && diff.lists.every(({ diff: d }) => d.added + d.removed + d.changed + d.moved === 0);
}

/**
 * The generated `changesSummary`: per list `+n`, `-n`, `n changed`, `n moved` (only the non-zero
 * ones), then the attributes (`title changed`). The first revision says so: `"First version: +3
 * questions"`, or `"First version"` when it is empty.
 */
export function summarize(diff: Diff, first = false): string {
  const parts: string[] = [];
  for (const { noun, diff: d } of diff.lists) {
    const n = (count: number) => `${count} ${count === 1 ? noun[0] : noun[1]}`;
    if (d.added) parts.push(`+${n(d.added)}`);
    if (d.removed) parts.push(`-${n(d.removed)}`);
    if (d.changed) parts.push(`${n(d.changed)} changed`);
    if (d.moved) parts.push(`${n(d.moved)} moved`);
  }
  for (const attribute of diff.attributes) parts.push(`${attribute} changed`);
  if (first) return parts.length ? `First version: ${parts.join(', ')}` : 'First version';
  return parts.length ? parts.join(', ') : 'no changes';
}

/** Hash of a definition, to tell "nothing changed" without reading the previous snapshot. */
export function definitionHash(definition: FormDefinition | DocumentDefinition, define: DefinitionText = definitionOf): string {
  const lists = 'fields' in definition ? { fields: definition.fields } : { sections: definition.sections, questions: definition.questions, rules: definition.rules };
  const head = 'fields' in definition ? [definition.document.title, definition.document.sha256] : [definition.form.title, definition.form.description, definition.form.settings];
  // The same text as hashed item by item, handed to the hash in one piece (thousands of small
  // updates cost more than the hashing).
  const parts = [canonicalJson(head)];
  for (const [kind, items] of Object.entries(lists)) {
    parts.push(`\n${kind}`);
    for (const item of [...items].sort((a, b) => a.order - b.order)) parts.push(`\n${item.id}\t${define(item, kind)}\t${placementOf(item, kind)}`);
  }
  return createHash('sha256').update(parts.join('')).digest('hex');
}
