import fsp from 'node:fs/promises';
import os from 'node:os';

/**
 * Samples the resident memory of a child process every `everyMs` and calls `over` (once) when it
 * passes `limitBytes`; returns a function that stops watching. `--max-old-space-size` bounds only
 * the JavaScript heap: the typed arrays pdf.js fills while inflating a stream live outside it, so
 * only the process's RSS tells how much a hostile file really takes.
 *
 * Linux only (`/proc/<pid>/status`); elsewhere nothing is sampled and only the heap limit holds.
 */
export function watchMemory(pid: number, limitBytes: number, over: (rssBytes: number) => void, everyMs = 25): () => void {
  let reading = false;
  let stopped = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const sample = async () => {
    if (reading || stopped) return;
    reading = true;
    const rss = await residentBytes(pid);
    reading = false;
    // `null`: the process is gone, or this is not Linux; nothing more to watch.
    if (rss === null) stop();
    else if (!stopped && rss > limitBytes) {
      stop();
      over(rss);
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  timer.unref();
  return stop;
}

/** The resident memory of a process (Linux), in bytes; `null` when it cannot be read. */
export async function residentBytes(pid: number): Promise<number | null> {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(await fsp.readFile(`/proc/${pid}/status`, 'latin1'));
    return kb ? Number(kb[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Lowers a helper process's CPU priority (nice 10): a PDF being read or a detection running on
 * every core must never starve the API process of CPU, which answers requests in milliseconds.
 */
export function yieldCpu(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    os.setPriority(pid, 10);
  } catch {
    // Gone already, or not allowed here: it then competes as an equal.
  }
}
