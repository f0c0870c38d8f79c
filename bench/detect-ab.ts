/**
 * This checkout's detection against another worktree's (`--base`, e.g. main checked out beside),
 * both in this one process, in turn: a change's speed on a shared, noisy machine, where two runs
 * of `bench:detect` differ by more than most changes do.
 *
 * - `detectLayout` on every page of ../shared/corpus as the data set cache holds it
 *   (`.cache/detect/pages`, dataset.ts): the two codes page by page in turn, the order alternating.
 * - The whole detection (`openForDetection` and `detectFields`) of the 37 forms with their widgets
 *   stripped: the two codes form by form in turn, the order alternating. pdf.js is one for the
 *   process, so the base's detection runs with whatever this checkout's `src/files/pdfjs.ts` did to
 *   the process, except `Uint8Array.prototype.toBase64`: before a run of the base, it is put back
 *   to core-js's when the base's `src/files/pdfjs.ts` does not replace it (code before the eighth
 *   session of 2026-11-29), and back to this checkout's after. Streams are inflated as each one's
 *   detection process inflates them: by its own src/detect/inflate.ts when it has one, else by
 *   Node's `DecompressionStream`.
 *
 * Prints the medians per page / per round and the median of the rounds' ratios (this / base: below 1,
 * this checkout is faster), after one round of warm-up.
 *
 *   node --import tsx bench/detect-ab.ts --base <worktree>      # BENCH_ROUNDS, 12 by default
 *
 * The base worktree needs this checkout's node_modules linked in (`ln -s "$PWD/node_modules"
 * <worktree>`), so that both load the same pdf.js. (The base's `src/files/pdfjs.ts` then warns that
 * it could not take the engine's push first: this checkout's has put it back already.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadDataset } from '../scripts/detect/dataset.js';
import { CORE_JS_TO_BASE64 } from '../src/files/pdfjs.js';
import { inflateOnThisThread } from '../src/detect/inflate.js';
import * as thisModel from '../src/detect/model.js';
import * as thisOpen from '../src/detect/open.js';
import * as thisPipeline from '../src/detect/pipeline.js';
import { strippedCorpus } from './corpus.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const args = process.argv.slice(2);
const baseArg = args.includes('--base') ? args[args.indexOf('--base') + 1] : undefined;
if (!baseArg) throw new Error('usage: node --import tsx bench/detect-ab.ts --base <worktree>');
const base = path.resolve(baseArg);

interface Code {
  detectLayout: typeof thisModel.detectLayout;
  defaultModel: typeof thisModel.defaultModel;
  openForDetection: typeof thisOpen.openForDetection;
  detectFields: typeof thisPipeline.detectFields;
  toBase64: unknown;
  /** Sets the global `DecompressionStream` its detection process has: its own src/detect/inflate.ts's, or Node's. */
  inflater: () => void;
}
const proto = Uint8Array.prototype as { toBase64?: unknown };
const ours: Code = { ...thisModel, ...thisOpen, ...thisPipeline, toBase64: proto.toBase64, inflater: () => inflateOnThisThread(true) };
const baseInflate = path.join(base, 'src/detect/inflate.ts');
const baseInflateOn = fs.existsSync(baseInflate) ? ((await import(baseInflate)) as { inflateOnThisThread: typeof inflateOnThisThread }).inflateOnThisThread : null;
const baseReplacesBase64 = fs.readFileSync(path.join(base, 'src/files/pdfjs.ts'), 'utf8').includes('restoreFastBase64');
const theirs: Code = {
  ...((await import(path.join(base, 'src/detect/model.ts'))) as typeof thisModel),
  ...((await import(path.join(base, 'src/detect/open.ts'))) as typeof thisOpen),
  ...((await import(path.join(base, 'src/detect/pipeline.ts'))) as typeof thisPipeline),
  toBase64: baseReplacesBase64 || !CORE_JS_TO_BASE64 ? proto.toBase64 : CORE_JS_TO_BASE64,
  inflater: () => (baseInflateOn ? baseInflateOn(true) : inflateOnThisThread(false)),
};
const codes = [ours, theirs];
const useBase64 = (code: Code) => Object.defineProperty(Uint8Array.prototype, 'toBase64', { value: code.toBase64, writable: true, enumerable: false, configurable: true });
codes.forEach((c) => c.defaultModel());

/** Runs `work` for each item with both codes in turn, ROUNDS + 1 times; per round, each code's total. */
async function alternate<T>(items: readonly T[], work: (code: Code, item: T) => unknown): Promise<number[][]> {
  const totals: number[][] = [[], []];
  for (let round = 0; round <= ROUNDS; round++) {
    const sums = [0, 0];
    for (const [i, item] of items.entries()) {
      for (let k = 0; k < 2; k++) {
        const c = (i + round + k) % 2;
        useBase64(codes[c]!);
        codes[c]!.inflater();
        const started = performance.now();
        await work(codes[c]!, item);
        sums[c]! += performance.now() - started;
      }
    }
    useBase64(ours);
    inflateOnThisThread(false);
    if (round > 0) sums.forEach((s, c) => totals[c]!.push(s));
  }
  return totals;
}

const report = (what: string, unit: string, per: number, [mine, base]: number[][]) =>
  console.log(
    `${what}: this ${(median(mine!) / per).toFixed(2)} ${unit}, base ${(median(base!) / per).toFixed(2)} ${unit}; this / base ${median(mine!.map((t, i) => t / base![i]!)).toFixed(3)} (rounds ${mine!.map((t, i) => (t / base![i]!).toFixed(2)).join(' ')})`,
  );

const pages = loadDataset((f) => f.startsWith('corpus--')).flatMap((f) => f.pages);
report('detectLayout', 'ms a page', pages.length, await alternate(pages, (code, page) => code.detectLayout(page.graphics, page.pageNumber)));

const corpus = await strippedCorpus();
report(
  'the detection',
  'ms a round',
  1,
  await alternate(corpus, async (code, form) => {
    const task = code.openForDetection(form.bytes.slice());
    try {
      await code.detectFields(await task.promise);
    } finally {
      await task.destroy();
    }
  }),
);
console.log(
  `(the base's detection ran with ${theirs.toBase64 === CORE_JS_TO_BASE64 ? "core-js's toBase64, as it did" : "this checkout's toBase64"}, its streams inflated ${baseInflateOn ? 'on this thread, by its inflate.ts' : "by Node's DecompressionStream"})`,
);
