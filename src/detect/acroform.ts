import { defaultLabel, type FieldType } from '../domain/fields.js';
import { rectOf, type PageView } from './geometry.js';
import type { DetectedField } from './types.js';

/** The properties of a pdf.js widget annotation this detector reads (`page.getAnnotations()`). */
export interface WidgetAnnotation {
  subtype?: string;
  fieldType?: string;
  fieldName?: string;
  alternativeText?: string;
  rect?: number[];
  hidden?: boolean;
  readOnly?: boolean;
  required?: boolean;
  multiLine?: boolean;
  checkBox?: boolean;
  radioButton?: boolean;
  pushButton?: boolean;
  buttonValue?: unknown;
  options?: Array<{ exportValue?: unknown; displayValue?: unknown }>;
  multiSelect?: boolean;
}

export interface AnnotatedPage {
  pageNumber: number;
  view: PageView;
  annotations: readonly WidgetAnnotation[];
}

const MAX_LABEL = 200;
const MAX_CHOICES = 500;
const MAX_CHOICE_LENGTH = 500;

const clean = (value: unknown): string => (typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : '');

function distinct(values: string[]): string[] {
  return [...new Set(values.filter((v) => v.length > 0).map((v) => v.slice(0, MAX_CHOICE_LENGTH)))].slice(0, MAX_CHOICES);
}

/**
 * Every widget of every form field, on every page: a field with several widgets (on one page or
 * many) gives one detected field per widget, each where its widget sits. Types: text →
 * `short_text` / `long_text` (multi-line), check box → `checkbox`, radio button → `mcq` with the
 * group's choices, choice → `dropdown` (`multi_select` for a multiple-selection list), signature →
 * `digital_signature`. Label: the field's tooltip, else its name. Push buttons, hidden widgets and
 * widgets off the page are not fields to fill: they are counted in `skipped`.
 */
export function detectAcroform(pages: readonly AnnotatedPage[], skipped: Record<string, number>): DetectedField[] {
  const skip = (reason: string) => (skipped[reason] = (skipped[reason] ?? 0) + 1);
  // A radio group's choices are the export values of all its widgets, wherever they are.
  const values = new Map<string, string[]>();
  for (const page of pages) {
    for (const a of page.annotations) {
      if (a.subtype !== 'Widget' || a.fieldType !== 'Btn' || !a.radioButton) continue;
      const name = a.fieldName ?? '';
      const list = values.get(name);
      if (list) list.push(clean(a.buttonValue));
      else values.set(name, [clean(a.buttonValue)]);
    }
  }
  const radioChoices = new Map([...values].map(([name, list]) => [name, distinct(list)]));
  const fields: DetectedField[] = [];
  for (const page of pages) {
    for (const a of page.annotations) {
      if (a.subtype !== 'Widget') continue;
      if (a.hidden) {
        skip('hidden');
        continue;
      }
      const rect = a.rect ? rectOf(page.view, a.rect) : null;
      if (!rect) {
        skip('off_page');
        continue;
      }
      const label = (clean(a.alternativeText) || clean(a.fieldName) || '').slice(0, MAX_LABEL);
      let type: FieldType;
      let choices: string[] | undefined;
      let name = label;
      switch (a.fieldType) {
        case 'Tx':
          type = a.multiLine ? 'long_text' : 'short_text';
          break;
        case 'Sig':
          type = 'digital_signature';
          break;
        case 'Ch':
          choices = distinct((a.options ?? []).map((o) => clean(o.displayValue) || clean(o.exportValue)));
          type = a.multiSelect ? 'multi_select' : 'dropdown';
          break;
        case 'Btn':
          if (a.pushButton) {
            skip('push_button');
            continue;
          }
          if (a.radioButton) {
            choices = [...(radioChoices.get(a.fieldName ?? '') ?? [])];
            type = 'mcq';
            const option = clean(a.buttonValue);
            // Each widget of the group is one option: say which in the label.
            if (option) name = `${label} (${option})`.slice(0, MAX_LABEL);
          } else {
            type = 'checkbox';
          }
          break;
        default:
          skip('unknown_field_type');
          continue;
      }
      // A choice field needs choices: without any it is a text field (a radio button, a box).
      if (choices !== undefined && choices.length === 0) {
        type = a.fieldType === 'Btn' ? 'checkbox' : 'short_text';
        choices = undefined;
      }
      fields.push({
        type,
        // A widget with neither tooltip nor name (pdf.js gives "" for a field without /T).
        label: name || defaultLabel(type),
        pageNumber: page.pageNumber,
        rect,
        confidence: 1,
        source: 'acroform',
        assigneeRole: null,
        isRequired: a.required === true,
        isReadOnly: a.readOnly === true,
        options: choices ? { choices } : {},
      });
    }
  }
  return fields;
}
