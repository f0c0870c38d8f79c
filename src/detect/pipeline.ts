import type { PDFDocumentProxy } from 'pdfjs-dist/types/src/display/api.js';
import { detectAcroform, type WidgetAnnotation } from './acroform.js';
import { iou, type PageView } from './geometry.js';
import { detectTextTags, type TextItem } from './text-tags.js';
import type { DetectedField, DetectionResult, Source } from './types.js';

export interface DetectOptions {
  /** Pages done so far of all pages, after each page. */
  onProgress?: (done: number, total: number) => void;
}

/** Sources in the order they win when two find the same box. */
const PRIORITY: Record<Source, number> = { acroform: 0, text_tag: 1, layout: 2, ai: 3 };

/**
 * Reads every page once (its view, widget annotations and text runs), runs the exact detectors
 * (`acroform`, `text_tag`) and merges their fields: a box that another source found already on
 * the same page (IoU ≥ 0.5) is a duplicate and dropped, the more exact source winning.
 */
export async function detectFields(doc: PDFDocumentProxy, options: DetectOptions = {}): Promise<DetectionResult> {
  const started = performance.now();
  const total = doc.numPages;
  const annotated = [];
  const texts = [];
  for (let pageNumber = 1; pageNumber <= total; pageNumber++) {
    const page = await doc.getPage(pageNumber);
    const viewport = page.getViewport({ scale: 1 });
    const view: PageView = {
      width: viewport.width,
      height: viewport.height,
      toView: (x, y) => viewport.convertToViewportPoint(x, y) as [number, number],
    };
    const annotations = (await page.getAnnotations({ intent: 'display' })) as WidgetAnnotation[];
    const content = await page.getTextContent();
    const items = content.items.filter((item): item is TextItem & typeof item => 'str' in item);
    annotated.push({ pageNumber, view, annotations });
    // Only pages that may hold a tag keep their text: a long, text-dense PDF stays small here.
    if (items.some((i) => i.str.includes('{')) && items.map((i) => i.str).join('').includes('{{')) {
      texts.push({ pageNumber, view, items: items.map((i) => ({ str: i.str, transform: i.transform as number[], width: i.width })) });
    }
    page.cleanup();
    options.onProgress?.(pageNumber, total);
  }
  const skipped: Record<string, number> = {};
  const warnings: string[] = [];
  const found = [...detectAcroform(annotated, skipped), ...detectTextTags(texts, warnings)];
  const { fields, duplicates } = mergeSources(found);
  const counts: Partial<Record<Source, number>> = {};
  for (const field of found) counts[field.source] = (counts[field.source] ?? 0) + 1;
  return {
    fields,
    stats: { pages: total, durationMs: Math.round(performance.now() - started), found: counts, duplicates, skipped, warnings },
  };
}

/**
 * Keeps every field of the most exact source and drops a field when a field of another, more
 * exact source covers the same box (IoU ≥ 0.5 on the same page). Fields of one source are never
 * merged with each other: two widgets stacked on each other are two fields.
 */
export function mergeSources(found: readonly DetectedField[]): { fields: DetectedField[]; duplicates: number } {
  const ordered = [...found].sort((a, b) => PRIORITY[a.source] - PRIORITY[b.source]);
  const kept: DetectedField[] = [];
  let duplicates = 0;
  for (const field of ordered) {
    const twin = kept.some((k) => k.source !== field.source && k.pageNumber === field.pageNumber && iou(k.rect, field.rect) >= 0.5);
    if (twin) duplicates++;
    else kept.push(field);
  }
  // In reading order: page, then top to bottom, then left to right.
  kept.sort((a, b) => a.pageNumber - b.pageNumber || a.rect.y - b.rect.y || a.rect.x - b.rect.x);
  return { fields: kept, duplicates };
}
