/**
 * The engine's `Array.prototype.push` against the one core-js puts in its place when pdf.js's
 * legacy build loads (src/files/pdfjs.ts puts the engine's back). Two processes of this script,
 * one with each push, take turns round by round: in each round, each process reads every page of
 * ../shared/corpus (widgets stripped) with pdf.js alone (text content and operator list, pdf.js's
 * defaults, as `bench:detect` times it) and runs the whole detection on every file (as the
 * detection process opens it). Medians of BENCH_ROUNDS rounds after one of warm-up, and the ratio
 * of each round's times (engine's push over core-js's).
 *
 *   node --import tsx bench/pdfjs-push.ts
 */
import { fork, type ChildProcess } from 'node:child_process';
import { CORE_JS_PUSH, pdfjs } from '../src/files/pdfjs.js';
import { median, PDFJS_ALONE_OPTIONS } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
type Push = 'engine' | 'core-js';
interface Times {
  alone: number;
  detection: number;
  pages: number;
}

if (process.env.PUSH_UNDER_TEST) {
  // A child: its push as asked, then one round per message.
  if (process.env.PUSH_UNDER_TEST === 'core-js') {
    if (!CORE_JS_PUSH) throw new Error('core-js replaced no push in this engine: nothing to compare');
    Object.defineProperty(Array.prototype, 'push', { value: CORE_JS_PUSH, writable: true, enumerable: false, configurable: true });
  }
  const { openForDetection } = await import('../src/detect/open.js');
  const { detectFields } = await import('../src/detect/pipeline.js');
  const { strippedCorpus } = await import('./corpus.js');
  const corpus = await strippedCorpus();
  const pages = corpus.reduce((n, f) => n + f.pages, 0);
  const round = async (): Promise<Times> => {
    let t = performance.now();
    for (const form of corpus) {
      const doc = await pdfjs.getDocument({ data: form.bytes.slice(), ...PDFJS_ALONE_OPTIONS }).promise;
      for (let p = 1; p <= doc.numPages; p++) {
        const page = await doc.getPage(p);
        await page.getTextContent();
        await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
        page.cleanup();
      }
      await doc.destroy();
    }
    const alone = performance.now() - t;
    t = performance.now();
    for (const form of corpus) {
      const task = openForDetection(form.bytes.slice());
      await detectFields(await task.promise);
      await task.destroy();
    }
    return { alone, detection: performance.now() - t, pages };
  };
  process.on('message', () => void round().then((times) => process.send!(times)));
  process.send!('ready');
} else {
  const start = (push: Push): Promise<ChildProcess> =>
    new Promise((resolve, reject) => {
      const child = fork(import.meta.filename, { env: { ...process.env, PUSH_UNDER_TEST: push }, execArgv: ['--import', 'tsx'] });
      child.once('message', () => resolve(child));
      child.once('exit', (code) => reject(new Error(`the ${push} process ended (${code})`)));
    });
  const round = (child: ChildProcess): Promise<Times> =>
    new Promise((resolve, reject) => {
      const ended = (code: number | null) => reject(new Error(`a process ended during a round (${code})`));
      child.once('exit', ended);
      child.once('message', (times) => {
        child.off('exit', ended);
        resolve(times as Times);
      });
      child.send('round');
    });
  const children: Record<Push, ChildProcess> = { engine: await start('engine'), 'core-js': await start('core-js') };
  const times: Record<Push, Times[]> = { engine: [], 'core-js': [] };
  for (let r = 0; r <= ROUNDS; r++) {
    // Alternating which goes first; the first round warms both up and is not counted.
    for (const push of (r % 2 ? ['engine', 'core-js'] : ['core-js', 'engine']) as Push[]) {
      const t = await round(children[push]);
      if (r > 0) times[push].push(t);
    }
  }
  for (const child of Object.values(children)) child.kill();
  const ms = (push: Push, key: 'alone' | 'detection') => median(times[push].map((t) => t[key])).toFixed(0);
  const ratios = (key: 'alone' | 'detection') => times.engine.map((t, i) => t[key] / times['core-js'][i]![key]);
  console.log(`${times.engine[0]!.pages} pages of ../shared/corpus, median ms of ${ROUNDS} rounds (each round: both processes, in turn):\n`);
  console.log("| push | pdf.js alone | the detection | the detection / pdf.js alone (median of the rounds' ratios) |");
  console.log('|---|---|---|---|');
  for (const push of ['core-js', 'engine'] as Push[]) {
    console.log(`| ${push} | ${ms(push, 'alone')} | ${ms(push, 'detection')} | ${median(times[push].map((t) => t.detection / t.alone)).toFixed(2)} × |`);
  }
  console.log(
    `\nThe engine's push over core-js's, round by round: pdf.js alone ${median(ratios('alone')).toFixed(3)} (${ratios('alone').map((x) => x.toFixed(2)).join(', ')}); the detection ${median(ratios('detection')).toFixed(3)} (${ratios('detection').map((x) => x.toFixed(2)).join(', ')}).`,
  );
}
