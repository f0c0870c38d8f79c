import { CHOICE_FIELD_TYPES, defaultLabel, FIELD_TYPES, type FieldType } from '../domain/fields.js';
import { boxOf, type PageView } from './geometry.js';
import type { DetectedField } from './types.js';

/** The properties of a text run this detector reads (`readText`'s runs, or `page.getTextContent().items`). */
export interface TextItem {
  str: string;
  /** `[a, b, c, d, e, f]`: text space to PDF user space; (a, b) runs along the text, (c, d) up it. */
  transform: number[];
  /** Advance of the whole string in user space, along (a, b). */
  width: number;
  /** Where each character starts, in user space along (a, b), when known (`readText`'s runs). */
  offsets?: ArrayLike<number>;
}

export interface TextPage {
  pageNumber: number;
  view: PageView;
  items: readonly TextItem[];
}

const TAG = /\{\{([^{}]{0,500}?)\}\}/g;
const ALIASES: Record<string, FieldType> = {
  signature: 'digital_signature',
  sign: 'digital_signature',
  initial: 'initials',
  text: 'short_text',
  textarea: 'long_text',
  select: 'dropdown',
};
const KEYS = new Set(['type', 'role', 'required', 'choices']);
const MAX_WARNINGS = 100;

/**
 * `{{Label;type=digital_signature;role=signer_1;required=true}}` tags in the text layer, also when
 * the tag is split over several text runs (the page's runs are read as one string), each placed
 * where its text sits on the page (rotated text and pages included). Keys: `type` (a field type,
 * or `signature`, `initial`, `text`, `textarea`, `select`; default `short_text`), `role`,
 * `required` (`true`/`false`), `choices` (`A|B|C`, for choice types). A tag that cannot be read is
 * left out and explained in `warnings`; a bad key or value is ignored with a warning.
 */
export function detectTextTags(pages: readonly TextPage[], warnings: string[]): DetectedField[] {
  const warn = (message: string) => {
    if (warnings.length < MAX_WARNINGS) warnings.push(message);
  };
  const fields: DetectedField[] = [];
  for (const page of pages) {
    let text = '';
    const starts: number[] = [];
    for (const item of page.items) {
      starts.push(text.length);
      text += item.str;
    }
    if (!text.includes('{{')) continue;
    for (const match of text.matchAll(TAG)) {
      const raw = match[0];
      const where = `page ${page.pageNumber}: tag ${JSON.stringify(raw.length > 80 ? `${raw.slice(0, 77)}...` : raw)}`;
      const parsed = parseTag(match[1]!, (problem) => warn(`${where}: ${problem}`));
      if (!parsed) continue;
      const rect = boxOf(page.view, cornersOf(page.items, starts, match.index, match.index + raw.length));
      if (!rect) {
        warn(`${where}: its text is outside the page`);
        continue;
      }
      fields.push({ ...parsed, pageNumber: page.pageNumber, rect, confidence: 1, source: 'text_tag', isReadOnly: false });
    }
  }
  return fields;
}

type ParsedTag = Pick<DetectedField, 'type' | 'label' | 'assigneeRole' | 'isRequired' | 'options'>;

function parseTag(inner: string, warn: (problem: string) => void): ParsedTag | null {
  const [labelPart, ...pairs] = inner.split(';');
  let type: FieldType = 'short_text';
  let role: string | null = null;
  let required = false;
  let choices: string[] | undefined;
  for (const pair of pairs) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)).trim().toLowerCase();
    const value = eq < 0 ? '' : pair.slice(eq + 1).trim();
    if (!KEYS.has(key)) {
      warn(`unknown key "${key}" ignored (keys: type, role, required, choices)`);
      continue;
    }
    if (key === 'type') {
      const named = value.toLowerCase();
      const known = (FIELD_TYPES as readonly string[]).includes(named) ? (named as FieldType) : ALIASES[named];
      if (!known) {
        warn(`unknown type "${value}"; the tag is left out (types: ${FIELD_TYPES.join(', ')})`);
        return null;
      }
      type = known;
    } else if (key === 'role') {
      if (value === '' || value.length > 100) warn('role must be 1 to 100 characters; ignored');
      else role = value;
    } else if (key === 'required') {
      const v = value.toLowerCase();
      if (v === 'true' || v === 'yes' || v === '1') required = true;
      else if (v === 'false' || v === 'no' || v === '0') required = false;
      else warn(`required must be true or false, not "${value}"; taken as false`);
    } else {
      choices = [...new Set(value.split('|').map((c) => c.trim()).filter(Boolean))].slice(0, 500).map((c) => c.slice(0, 500));
    }
  }
  if (CHOICE_FIELD_TYPES.has(type) && !choices?.length) {
    warn(`type ${type} needs choices (choices=A|B|C); the tag is left out`);
    return null;
  }
  const label = labelPart!.replace(/\s+/g, ' ').trim().slice(0, 200) || defaultLabel(type);
  return { type, label, assigneeRole: role, isRequired: required, options: CHOICE_FIELD_TYPES.has(type) ? { choices } : {} };
}

/**
 * Advance widths of Helvetica (the standard font's metrics, in 1/1000 em) for the printable ASCII
 * characters. A text run that carries only its total advance (no `offsets`) has the share of it
 * before a tag inside the run estimated with these widths (exact for Helvetica and Arial, close
 * for most sans serifs, and far better than an even share per character for any proportional font).
 */
const HELVETICA =
  '278,278,355,556,556,889,667,191,333,333,389,584,278,333,278,278,556,556,556,556,556,556,556,556,556,556,278,278,584,584,584,556,1015,667,667,722,722,667,611,778,722,278,500,667,556,833,722,778,667,778,722,667,611,722,667,944,667,667,611,278,278,278,469,556,333,556,556,500,556,556,278,556,556,222,222,500,222,833,556,556,556,556,333,500,278,556,500,722,500,500,500,334,260,334,584'
    .split(',')
    .map(Number);

function advance(text: string): number {
  let sum = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    sum += code >= 32 && code <= 126 ? HELVETICA[code - 32]! : 556;
  }
  return sum;
}

/**
 * Corners, in user space, of the part of the page's text from character `from` to `to` (of the
 * runs read as one string): for each run it overlaps, the slice of the run's advance (where its
 * characters print, or estimated by Helvetica's widths), from a fifth of the font size below the
 * baseline (descenders) to the font size above it.
 */
function cornersOf(items: readonly TextItem[], starts: number[], from: number, to: number): Array<[number, number]> {
  const corners: Array<[number, number]> = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const start = starts[i]!;
    const end = start + item.str.length;
    if (end <= from || start >= to || item.str.length === 0) continue;
    const [a, b, c, d, e, f] = item.transform as [number, number, number, number, number, number];
    const along = Math.hypot(a, b) || 1;
    const ux = a / along;
    const uy = b / along;
    const whole = advance(item.str) || 1;
    const offset = (k: number) => (item.offsets?.length === item.str.length + 1 ? item.offsets[k]! : (advance(item.str.slice(0, k)) / whole) * item.width);
    const s = offset(Math.max(from, start) - start);
    const t = offset(Math.min(to, end) - start);
    const x0 = e + ux * s;
    const y0 = f + uy * s;
    const x1 = e + ux * t;
    const y1 = f + uy * t;
    corners.push([x0 - 0.2 * c, y0 - 0.2 * d], [x1 - 0.2 * c, y1 - 0.2 * d], [x0 + c, y0 + d], [x1 + c, y1 + d]);
  }
  return corners;
}
