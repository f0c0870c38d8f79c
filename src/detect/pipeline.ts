import { AnnotationMode } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { PDFDocumentProxy } from 'pdfjs-dist/types/src/display/api.js';
import { detectAcroform, type WidgetAnnotation } from './acroform.js';
import { refineWithAi, type AiConfig, type AiPageInput } from './ai.js';
import { iou, type PageView } from './geometry.js';
import { calibrated, pageCandidates, toField } from './layout.js';
import { readPage, type TextContentItem } from './layout-page.js';
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
  /** How long the AI review of all pages may take (default 5 minutes, well inside the thread's limit). */
  aiBudgetMs?: number;
}

const AI_BUDGET_MS = 5 * 60_000;

/** Sources in the order they win when two find the same box. */
const PRIORITY: Record<Source, number> = { acroform: 0, text_tag: 1, layout: 2, ai: 3 };

/**
 * Reads every page once (its view, widget annotations, text and drawing), runs the exact
 * detectors (`acroform`, `text_tag`) and the layout detector, and merges their fields: a box that
 * another source found already on the same page (IoU ≥ 0.5) is a duplicate and dropped, the more
 * exact source winning. Layout fields are kept only on pages where no exact source found a field:
 * a page with form widgets or text tags already says where its fields are. With `engine: "ai"`,
 * the layout candidates of each page are reviewed by the configured model.
 */
export async function detectFields(doc: PDFDocumentProxy, options: DetectOptions = {}): Promise<DetectionResult> {
  const started = performance.now();
  const total = doc.numPages;
  const annotated = [];
  const texts = [];
  const layout: DetectedField[] = [];
  const aiPages: AiPageInput[] = [];
  const wantAi = options.engine === 'ai';
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
    const content = await page.getTextContent();
    const items = content.items.filter((item): item is TextItem & typeof item => 'str' in item);
    annotated.push({ pageNumber, view, annotations });
    // Only pages that may hold a tag keep their text: a long, text-dense PDF stays small here.
    if (items.some((i) => i.str.includes('{')) && items.map((i) => i.str).join('').includes('{{')) {
      texts.push({ pageNumber, view, items: items.map((i) => ({ str: i.str, transform: i.transform as number[], width: i.width })) });
    }
    // A page with widgets or tags says where its fields are: no layout detection there.
    const widgets = annotations.some((a) => a.subtype === 'Widget' && !a.hidden && !a.pushButton);
    const tags = texts.at(-1)?.pageNumber === pageNumber && detectTextTags([texts.at(-1)!], []).length > 0;
    if (widgets || tags) {
      page.cleanup();
      pageDone();
      continue;
    }
    // The printed page only: widget appearances are the acroform detector's.
    const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
    // Fonts are loaded once the operator list is read: their names tell symbol fonts apart.
    const fontOf = (id: string): string | undefined => {
      try {
        return page.commonObjs.has(id) ? (page.commonObjs.get(id) as { name?: string } | null)?.name : undefined;
      } catch {
        return undefined;
      }
    };
    const graphics = readPage(viewport, operators, items as unknown as TextContentItem[], fontOf);
    const fields: DetectedField[] = [];
    for (const candidate of pageCandidates(graphics)) {
      const field = toField(candidate, pageNumber, graphics, calibrated(candidate));
      if (field) fields.push(field);
    }
    layout.push(...fields);
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
  const warnings: string[] = [];
  const exact = [...detectAcroform(annotated, skipped), ...detectTextTags(texts, warnings)];
  const exactPages = new Set(exact.map((f) => f.pageNumber));
  let detected = layout.filter((f) => !exactPages.has(f.pageNumber));
  if (wantAi) {
    const pages = aiPages.filter((p) => !exactPages.has(p.pageNumber));
    if (!options.ai) warnings.push('ai: no AI endpoint is configured; the layout result is used');
    const refined: DetectedField[] = [];
    const warn = (message: string) => {
      if (warnings.length < 100) warnings.push(message);
    };
    const deadline = performance.now() + (options.aiBudgetMs ?? AI_BUDGET_MS);
    for (const page of pages) {
      const remaining = deadline - performance.now();
      if (!options.ai || remaining <= 0) {
        if (options.ai) warn(`ai: page ${page.pageNumber}: the AI review ran out of its time; the layout result is used`);
        refined.push(...page.candidates);
      } else {
        // One page at a time under what is left of the budget: a slow endpoint costs the review
        // of the pages it did not reach, never the job.
        const budget = AbortSignal.timeout(Math.ceil(remaining));
        const signal = options.signal ? AbortSignal.any([options.signal, budget]) : budget;
        try {
          refined.push(...(await refineWithAi([page], options.ai, warnings, { signal, fetch: options.fetch })));
        } catch (error) {
          if (options.signal?.aborted || !budget.aborted) throw error;
          warn(`ai: page ${page.pageNumber}: the AI review ran out of its time; the layout result is used`);
          refined.push(...page.candidates);
        }
      }
      pageDone();
    }
    for (const page of aiPages) if (exactPages.has(page.pageNumber)) pageDone();
    const reviewed = new Set(pages.map((p) => p.pageNumber));
    detected = [...detected.filter((f) => !reviewed.has(f.pageNumber)), ...refined];
  }
  const found = [...exact, ...detected];
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
