import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { UnreadableDocument } from './errors.js';

/** Finds `soffice` on the PATH; `null` when LibreOffice is not installed. */
export function findSoffice(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v soffice || command -v libreoffice'], { encoding: 'utf8' });
  const bin = found.stdout.trim().split('\n')[0];
  return found.status === 0 && bin ? bin : null;
}

/** Too many conversions are waiting: answered 503, the client retries later. */
export class ConverterBusy extends Error {}

/**
 * DOCX → PDF with LibreOffice, one conversion at a time (soffice is heavy and keeps a profile that
 * two instances must not share), in a throwaway profile and output folder, with a time limit after
 * which the whole process group is killed.
 */
export class LibreOfficeConverter {
  private queue: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(
    readonly bin: string,
    private readonly timeoutMs = 120_000,
    /** Conversions waiting or running beyond which new ones are refused (503) instead of queued for minutes. */
    private readonly maxQueued = 8,
  ) {}

  convert(docx: string): Promise<string> {
    if (this.waiting >= this.maxQueued) {
      return Promise.reject(new ConverterBusy(`${this.waiting} DOCX conversions are already waiting; retry in a minute.`));
    }
    this.waiting++;
    const run = this.queue.then(() => this.convertNow(docx)).finally(() => this.waiting--);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Converts and returns the path of the PDF, in a folder the caller removes with `cleanup`. */
  private async convertNow(docx: string): Promise<string> {
    const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'formsign-soffice-'));
    const input = path.join(work, 'input.docx');
    await fsp.copyFile(docx, input);
    const profile = `file://${path.join(work, 'profile')}`;
    const child = spawn(
      this.bin,
      [`-env:UserInstallation=${profile}`, '--headless', '--norestore', '--nolockcheck', '--convert-to', 'pdf', '--outdir', work, input],
      // Its own process group (to kill it whole) and none of the server's environment (secrets).
      { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8' } },
    );
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      const outcome = await Promise.race([exited, timedOut]);
      if (outcome === 'timeout') {
        killGroup(child.pid);
        throw new UnreadableDocument(`LibreOffice did not convert the DOCX within ${this.timeoutMs / 1000} s`);
      }
      const pdf = path.join(work, 'input.pdf');
      if (outcome !== 0 || !fs.existsSync(pdf)) throw new UnreadableDocument('LibreOffice could not convert the DOCX to PDF');
      return pdf;
    } catch (error) {
      await cleanup(work);
      throw error;
    } finally {
      clearTimeout(timer);
      killGroup(child.pid);
    }
  }
}


/** Removes the working folder of a conversion, given the PDF path it returned. */
export async function cleanup(pdfOrDir: string): Promise<void> {
  const dir = pdfOrDir.endsWith('.pdf') ? path.dirname(pdfOrDir) : pdfOrDir;
  if (path.basename(dir).startsWith('formsign-soffice-')) await fsp.rm(dir, { recursive: true, force: true });
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
