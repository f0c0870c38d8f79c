import { execFileSync } from 'node:child_process';

/**
 * The PDF helper processes this test process started, in the order of their process ids.
 *
 * `pgrep` is run directly, not through a shell: a shell running `pgrep … -f pdf-worker` is itself
 * a child of this process whose command line names pdf-worker, and after the machine's process ids
 * wrap around it can sort before the helper.
 */
export function pdfHelperPids(): number[] {
  let out = '';
  try {
    out = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'pdf-worker'], { encoding: 'utf8' });
  } catch (err) {
    // pgrep exits with 1 when nothing matches.
    if ((err as { status?: number }).status !== 1) throw err;
  }
  return out.split('\n').filter(Boolean).map(Number);
}
