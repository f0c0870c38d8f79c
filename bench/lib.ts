/** Node flags the server runs with, as `npm start` and the `formsign` command start it. */
export const SERVER_FLAGS = process.env.BENCH_SERVER_FLAGS !== undefined ? process.env.BENCH_SERVER_FLAGS.split(' ').filter(Boolean) : ['--max-semi-space-size=4'];

export { freePort } from '../test/helpers/net.js';

/**
 * How "pdf.js alone", the baseline of the detection benchmarks, opens a file: pdf.js's defaults
 * (images decoded), with the detection's settings for eval, font faces, system fonts and logging.
 */
export const PDFJS_ALONE_OPTIONS = { isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 } as const;

export async function waitUp(url: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // starting
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server at ${url} did not start`);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}
