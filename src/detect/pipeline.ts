import { MAX_FIELDS_PER_DOCUMENT } from '../domain/fields.js';
import { AnnotationMode } from '../files/pdfjs.js';
import type { PDFDocumentProxy } from 'pdfjs-dist/types/src/display/api.js';
import { detectAcroform, type WidgetAnnotation } from './acroform.js';
import { refineWithAi, type AiConfig, type AiPageInput } from './ai.js';
import { iou, type PageView } from './geometry.js';
import { detectLayout } from './model.js';
import { readPage } from './layout-page.js';
import { pageFonts, readText } from './page-text.js';
import { detectTextTags, type TextItem } from './text-tags.js';
import type { DetectedField, DetectionResult, Source } from './types.js';

export interface DetectOptions {
  /** Pages done so far of all pages, after each page. */
  onProgress?: (done: number, total: number) => void;
  /** `layout` (default) or `ai`: the layout candidates reviewed by the configured model. */
  engine?: 'layout' | 'ai';
  /** The model for `engine: "ai"`; without one the layout result stands, with a warning. */
  ai?: AiConfig | null;
  /** Stops the AI requests of a job that is being stopped. */
  signal?: AbortSignal;
  /** For tests of the AI engine. */
  fetch?: typeof fetch;
  /** How long the AI review of all pages may take (default 5 minutes). */
  aiBudgetMs?: number;
  /**
   * When the AI review must end at the latest (a `performance.now()` time): the detection's own
   * time limit, less a margin, so that a slow read and a slow review together never outlast it.
   */
  aiDeadline?: number;
}

const AI_BUDGET_MS = 5 * 60_000;

/**
 * The `ai` engine: the model reviews each page's layout candidates, one page at a time within the
 * review's time budget. A slow endpoint costs the review of the pages it did not reach (they keep
 * their layout fields, with a warning), never the job; stopping the job (`options.signal`) stops it.
 */
async function review(pages: readonly AiPageInput[], options: DetectOptions, warnings: string[], pageDone: () => void): Promise<DetectedField[]> {
  const warn = (message: string) => {
    if (warnings.length < 100) warnings.push(message);
  };
  if (!options.ai) warn('ai: no AI endpoint is configured; the layout result is used');
  const fields: DetectedField[] = [];
  const deadline = Math.min(performance.now() + (options.aiBudgetMs ?? AI_BUDGET_MS), options.aiDeadline ?? Infinity);
  for (const page of pages) {
    const remaining = Math.ceil(deadline - performance.now());
    let reviewed: DetectedField[] | null = null;
    if (options.ai && remaining > 0) {
      const budget = AbortSignal.timeout(remaining);
      try {
        reviewed = await refineWithAi([page], options.ai, warnings, { signal: options.signal ? AbortSignal.any([options.signal, budget]) : budget, fetch: options.fetch });
      } catch (error) {
        if (options.signal?.aborted || !budget.aborted) throw error;
      }
    }
    if (options.ai && !reviewed) warn(`ai: page ${page.pageNumber}: the AI review ran out of its time; the layout result is used`);
    fields.push(...(reviewed ?? page.candidates));
    pageDone();
  }
  return fields;
}

/**
 * At most `max` fields: the exact sources' first (their order), then the most confident of the
 * others; in their original order (page by page), so a result reads as before, only shorter.
 */
export function keepBest(fields: readonly DetectedField[], max: number): DetectedField[] {
  if (fields.length <= max) return [...fields];
  const rank = fields.map((field, index) => ({ field, index }));
  rank.sort((a, b) => exactFirst(a.field) - exactFirst(b.field) || b.field.confidence - a.field.confidence || a.index - b.index);
  return rank
    .slice(0, max)
    .sort((a, b) => a.index - b.index)
    .map((r) => r.field);
}

function exactFirst(field: DetectedField): number {
  return field.source === 'acroform' || field.source === 'text_tag' ? 0 : 1;
}

/** Sources in the order they win when two find the same box. */
const PRIORITY: Record<Source, number> = { acroform: 0, text_tag: 1, layout: 2, ai: 3 };

/**
 * Reads every page once (its view, widget annotations, text and drawing), runs the exact
 * detectors (`acroform`, `text_tag`) and the layout detector, and merges their fields: a box that
 * another source found already on the same page (IoU ≥ 0.5) is a duplicate and dropped, the more
 * exact source winning. The layout detector runs only on pages with no fillable widget and no
 * tag: such a page already says where its fields are. With `engine: "ai"`,
 * the layout candidates of each page are reviewed by the configured model.
 */
export async function detectFields(doc: PDFDocumentProxy, options: DetectOptions = {}): Promise<DetectionResult> {
  const started = performance.now();
  const total = doc.numPages;
  const annotated = [];
  const warnings: string[] = [];
  const tagged: DetectedField[] = [];
  const layout: DetectedField[] = [];
  const aiPages: AiPageInput[] = [];
  const wantAi = options.engine === 'ai';
  let layoutFound = 0;
  let layoutCut = false;
  // Pages done: read, and reviewed by the model where they have candidates to review.
  let done = 0;
  const pageDone = () => options.onProgress?.(++done, total);
  options.onProgress?.(0, total);
  for (let pageNumber = 1; pageNumber <= total; pageNumber++) {
    const page = await doc.getPage(pageNumber);
    const viewport = page.getViewport({ scale: 1 });
    const view: PageView = {
      width: viewport.width,
      height: viewport.height,
      toView: (x, y) => viewport.convertToViewportPoint(x, y) as [number, number],
    };
    const annotations = (await page.getAnnotations({ intent: 'display' })) as WidgetAnnotation[];
    annotated.push({ pageNumber, view, annotations });
    // A page with fillable widgets says where its fields are: no layout detection there, so only
    // its text is read, for tags.
    const widgets = annotations.some((a) => a.subtype === 'Widget' && !a.hidden && !a.pushButton);
    if (widgets) {
      const content = await page.getTextContent();
      const items = content.items.filter((item): item is TextItem & typeof item => 'str' in item);
      // Tags are read page by page (only a page that may hold one is looked at).
      if (items.some((i) => i.str.includes('{'))) tagged.push(...detectTextTags([{ pageNumber, view, items }], warnings));
      page.cleanup();
      pageDone();
      continue;
    }
    // Any other page: the printed page only (widget appearances are the acroform detector's), its
    // text read from the same operator list (page-text.ts).
    const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
    const items = readText(viewport, operators, pageFonts(page));
    const tags = items.some((i) => i.str.includes('{')) ? detectTextTags([{ pageNumber, view, items }], warnings) : [];
    tagged.push(...tags);
    // A page with tags says where its fields are too.
    if (tags.length) {
      page.cleanup();
      pageDone();
      continue;
    }
    const graphics = readPage(viewport, operators, items);
    const fields = detectLayout(graphics, pageNumber);
    layout.push(...fields);
    layoutFound += fields.length;
    // Never more layout fields kept than a result can hold (below), however many pages.
    if (!wantAi && layout.length > 2 * MAX_FIELDS_PER_DOCUMENT) {
      layout.splice(0, layout.length, ...keepBest(layout, MAX_FIELDS_PER_DOCUMENT));
      layoutCut = true;
    }
    if (wantAi && fields.length) {
      const text = graphics.words.map((w) => ({
        str: w.str,
        rect: { x: w.x / graphics.width, y: w.y / graphics.height, width: w.w / graphics.width, height: w.h / graphics.height },
      }));
      aiPages.push({ pageNumber, text, candidates: fields });
    } else {
      pageDone();
    }
    page.cleanup();
  }
  const skipped: Record<string, number> = {};
  const exact = [...detectAcroform(annotated, skipped), ...tagged];
  // Layout fields are only on pages without exact ones; with `ai`, every such page with fields
  // waits in `aiPages` for its review.
  const detected = wantAi ? await review(aiPages, options, warnings, pageDone) : layout;
  const found = [...exact, ...detected];
  const { fields: merged, duplicates } = mergeSources(found);
  const counts: Partial<Record<Source, number>> = {};
  for (const field of found) counts[field.source] = (counts[field.source] ?? 0) + 1;
  if (layoutCut) counts.layout = layoutFound;
  let fields = merged;
  if (fields.length > MAX_FIELDS_PER_DOCUMENT || layoutCut) {
    fields = keepBest(fields, MAX_FIELDS_PER_DOCUMENT);
    warnings.push(
      `more fields were found than a document holds (${MAX_FIELDS_PER_DOCUMENT}): the result keeps ${fields.length}, exact ones (acroform, text_tag) first, then the most confident`,
    );
  }
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
