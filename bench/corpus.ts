/**
 * The corpus as layout detection sees it (../shared/corpus/README.md, "Layout detection"): every
 * widget annotation and the /AcroForm dictionary removed (decrypted first where the file is
 * encrypted; the corpus's encrypted file opens with an empty password), so that only the printed
 * page remains. And the scoring that README defines.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDFArray, PDFDict, PDFDocument, PDFName } from '@cantoo/pdf-lib';
import { iou } from '../src/detect/geometry.js';
import type { DetectionLoading } from '../src/detect/open.js';
import { pdfjs } from '../src/files/pdfjs.js';
import type { DetectedField, Rect } from '../src/detect/types.js';
import { CORPUS } from '../test/helpers/files.js';

export interface TruthWidget {
  name: string;
  type: string;
  pageNumber: number;
  rect: Rect;
  hidden: boolean;
}

export interface StrippedForm {
  name: string;
  pages: number;
  /** The printed pages only: no widget, no /AcroForm. */
  bytes: Uint8Array;
  /** Widgets that count (not hidden, not button/unknown), with their scoring class. */
  truth: Array<TruthWidget & { cls: Cls }>;
  /** Widgets left on the stripped file (must be 0). */
  widgetsLeft: number;
}

export const CLASSES = ['text', 'checkbox', 'signature'] as const;
export type Cls = (typeof CLASSES)[number];

const CLASS_OF: Record<string, Cls | undefined> = { text: 'text', choice: 'text', checkbox: 'checkbox', radio: 'checkbox', signature: 'signature' };

/** The scoring class of a detected field's type. */
export function classOfType(type: string): Cls {
  if (type === 'checkbox') return 'checkbox';
  if (type === 'digital_signature' || type === 'initials') return 'signature';
  return 'text';
}

const isWidget = (annots: PDFArray, i: number) => {
  const a = annots.lookup(i);
  return a instanceof PDFDict && a.get(PDFName.of('Subtype'))?.toString() === '/Widget';
};

function countWidgets(doc: PDFDocument): number {
  let n = 0;
  for (const page of doc.getPages()) {
    const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) continue;
    for (let i = 0; i < annots.size(); i++) if (isWidget(annots, i)) n++;
  }
  return n;
}

/** Removes every widget annotation from every page and the /AcroForm dictionary. */
export async function stripWidgets(original: Uint8Array, encrypted: boolean): Promise<{ bytes: Uint8Array; widgetsLeft: number }> {
  const doc = await PDFDocument.load(original, encrypted ? { password: '', updateMetadata: false } : { updateMetadata: false });
  for (const page of doc.getPages()) {
    const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) continue;
    const kept = PDFArray.withContext(doc.context);
    for (let i = 0; i < annots.size(); i++) if (!isWidget(annots, i)) kept.push(annots.get(i));
    if (kept.size() === 0) page.node.delete(PDFName.of('Annots'));
    else page.node.set(PDFName.of('Annots'), kept);
  }
  doc.catalog.delete(PDFName.of('AcroForm'));
  const bytes = await doc.save({ useObjectStreams: false });
  // A decrypted original is saved without encryption (its trailer has no /Encrypt); pdf-lib's own
  // parser still sees the stale /Encrypt of the original's xref stream object, hence ignoreEncryption.
  const check = await PDFDocument.load(bytes, { updateMetadata: false, ignoreEncryption: true });
  return { bytes, widgetsLeft: countWidgets(check) + (check.catalog.get(PDFName.of('AcroForm')) ? 1 : 0) };
}

interface ManifestEntry {
  file: string;
  encrypted: boolean | string;
  truth: string;
}

/** Every corpus form, stripped, with its truth. */
export async function strippedCorpus(): Promise<StrippedForm[]> {
  const manifest = JSON.parse(fs.readFileSync(path.join(CORPUS, 'manifest.json'), 'utf8')) as ManifestEntry[];
  const forms: StrippedForm[] = [];
  for (const entry of [...manifest].sort((a, b) => a.file.localeCompare(b.file))) {
    const original = new Uint8Array(fs.readFileSync(path.join(CORPUS, entry.file)));
    const truthFile = JSON.parse(fs.readFileSync(path.join(CORPUS, entry.truth), 'utf8')) as { pages: unknown[]; widgets: TruthWidget[] };
    const { bytes, widgetsLeft } = await stripWidgets(original, entry.encrypted !== false);
    const truth = truthFile.widgets.flatMap((w) => {
      const cls = CLASS_OF[w.type];
      return !w.hidden && cls ? [{ ...w, cls }] : [];
    });
    forms.push({ name: path.basename(entry.file, '.pdf'), pages: truthFile.pages.length, bytes, truth, widgetsLeft });
  }
  return forms;
}

export { iou };

export interface Match {
  detected: number;
  truth: number;
  iou: number;
}

/** Greedy matching by IoU on the same page, each box used once, pairs at or above `threshold`. */
export function match(detected: readonly Pick<DetectedField, 'pageNumber' | 'rect'>[], truth: readonly Pick<TruthWidget, 'pageNumber' | 'rect'>[], threshold: number): Match[] {
  const pairs: Match[] = [];
  for (let d = 0; d < detected.length; d++) {
    for (let t = 0; t < truth.length; t++) {
      if (detected[d]!.pageNumber !== truth[t]!.pageNumber) continue;
      const v = iou(detected[d]!.rect, truth[t]!.rect);
      if (v >= threshold) pairs.push({ detected: d, truth: t, iou: v });
    }
  }
  pairs.sort((a, b) => b.iou - a.iou || a.detected - b.detected || a.truth - b.truth);
  const usedD = new Set<number>();
  const usedT = new Set<number>();
  const out: Match[] = [];
  for (const p of pairs) {
    if (usedD.has(p.detected) || usedT.has(p.truth)) continue;
    usedD.add(p.detected);
    usedT.add(p.truth);
    out.push(p);
  }
  return out;
}

export interface Counts {
  detected: number;
  truth: number;
  matched: number;
  typeRight: number;
}

export const emptyCounts = (): Counts => ({ detected: 0, truth: 0, matched: 0, typeRight: 0 });

export function add(into: Counts, c: Counts): void {
  into.detected += c.detected;
  into.truth += c.truth;
  into.matched += c.matched;
  into.typeRight += c.typeRight;
}

export interface Score {
  all: Counts;
  perClass: Record<Cls, Counts>;
  matches: Match[];
}

/**
 * Scores one file's detected fields against its truth at one IoU threshold. Overall, every pair
 * of the greedy matching counts, and its type is right when the detected type's class is the
 * widget's class. Per class, a detected box counts in the class of its type, a truth box in the
 * class of its widget, and a pair only when both are of that class.
 */
export function score(detected: readonly DetectedField[], truth: ReadonlyArray<TruthWidget & { cls: Cls }>, threshold: number): Score {
  const matches = match(detected, truth, threshold);
  const perClass = { text: emptyCounts(), checkbox: emptyCounts(), signature: emptyCounts() };
  for (const d of detected) perClass[classOfType(d.type)].detected++;
  for (const t of truth) perClass[t.cls].truth++;
  const all = { detected: detected.length, truth: truth.length, matched: matches.length, typeRight: 0 };
  for (const m of matches) {
    const cls = truth[m.truth]!.cls;
    if (classOfType(detected[m.detected]!.type) !== cls) continue;
    perClass[cls].matched++;
    perClass[cls].typeRight++;
    all.typeRight++;
  }
  return { all, perClass, matches };
}

export const precision = (c: Counts) => (c.detected ? c.matched / c.detected : 0);
export const recall = (c: Counts) => (c.truth ? c.matched / c.truth : 0);
export const f1 = (c: Counts) => {
  const p = precision(c);
  const r = recall(c);
  return p + r ? (2 * p * r) / (p + r) : 0;
};
export const typeAccuracy = (c: Counts) => (c.matched ? c.typeRight / c.matched : 0);

/** A file opened by pdf.js's own `getDocument` with `options` (its own port and handling of fonts), in the shape `openForDetection` gives. */
export function openWithPdfjs(data: Uint8Array, options: object): DetectionLoading {
  const task = pdfjs.getDocument({ data, ...options });
  return { promise: task.promise, destroy: () => task.destroy() };
}
