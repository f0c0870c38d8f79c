import type { FieldType } from '../domain/fields.js';

/** Where a detected field came from (API.md, Parse jobs). */
export const SOURCES = ['acroform', 'text_tag', 'layout', 'ai'] as const;
export type Source = (typeof SOURCES)[number];

/** A box in fractions of the displayed page (CropBox, /Rotate applied), origin top-left. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One detected field: the shape every detector answers and the job result stores. */
export interface DetectedField {
  type: FieldType;
  label: string;
  pageNumber: number;
  rect: Rect;
  /** 0..1: how likely this is a field of this type (1 for exact sources). */
  confidence: number;
  source: Source;
  assigneeRole: string | null;
  isRequired: boolean;
  isReadOnly: boolean;
  /** `choices` for mcq, multi_select and dropdown. */
  options: { choices?: string[] };
}

export interface DetectionStats {
  pages: number;
  durationMs: number;
  /** Fields found per source, before duplicates were dropped. */
  found: Partial<Record<Source, number>>;
  /** Boxes dropped as duplicates of another source's box. */
  duplicates: number;
  /** Widgets that are not fields to fill (push buttons, hidden widgets), by reason. */
  skipped: Record<string, number>;
  /** Problems that did not stop detection (bad text tags …). */
  warnings: string[];
}

export interface DetectionResult {
  fields: DetectedField[];
  stats: DetectionStats;
}
