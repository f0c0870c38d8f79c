import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { UnreadableDocument } from './errors.js';
import { FairQueue, type FairQueueLimits } from './fair-queue.js';
import { watchGroup, yieldCpu } from './memory-watch.js';

/** The first of `names` found on the PATH, `null` when none is. */
function onPath(...names: string[]): string | null {
  const found = spawnSync('sh', ['-c', names.map((n) => `command -v ${n}`).join(' || ')], { encoding: 'utf8' });
  const bin = found.stdout.trim().split('\n')[0];
  return found.status === 0 && bin ? bin : null;
}

/** Finds `soffice` on the PATH; `null` when LibreOffice is not installed. */
export function findSoffice(): string | null {
  return onPath('soffice', 'libreoffice');
}

/**
 * GNU coreutils' `timeout` on the PATH, `null` without one. A conversion runs under it with a
 * deadline a little past its own time limit, so that it ends even when the server that started it
 * died (it is in a process group of its own, which the server's death does not end). Only GNU's:
 * at its deadline it signals its whole process group, where BusyBox's kills only the program it
 * ran (and its older releases take no `-s`).
 */
export function findTimeout(): string | null {
  const bin = onPath('timeout');
  if (!bin) return null;
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return version.status === 0 && /GNU coreutils/.test(version.stdout) ? bin : null;
}

/** How long past a conversion's time limit its `timeout` kills the group: the server's own kill comes first. */
export const DEADLINE_GRACE_S = 2;

export const LIBREOFFICE_DEFAULTS = {
  /** Conversions at once (each its own soffice, profile and folder); never two of one workspace. */
  conversions: 2,
  /** Resident memory all of one conversion's processes may reach together; past it the DOCX answers 422. */
  maxRssMb: 1024,
};

/**
 * DOCX → PDF with LibreOffice, two conversions at a time and never two of one workspace,
 * workspaces taking turns (`FairQueue`: 2 conversions waiting per workspace, 8 in all; more answer
 * 503 with Retry-After). Each runs in a throwaway profile and output folder, in its own process
 * group at nice 10, with a time limit and a limit on the group's resident memory after either of
 * which the whole group is killed.
 */
export class LibreOfficeConverter {
  private readonly queue: FairQueue;
  private readonly maxRssBytes: number;
  /** `timeout`, under which each conversion runs (`findTimeout`); `null`: none, the server's kill alone. */
  private readonly timeoutBin: string | null;

  constructor(
    readonly bin: string,
    private readonly timeoutMs = 120_000,
    limits: FairQueueLimits = { perKey: 2, total: 8, retryAfterS: 60 },
    options: { conversions?: number; maxRssMb?: number; timeoutBin?: string | null } = {},
  ) {
    this.timeoutBin = options.timeoutBin === undefined ? findTimeout() : options.timeoutBin;
    const conversions = options.conversions ?? LIBREOFFICE_DEFAULTS.conversions;
    if (!(Number.isInteger(conversions) && conversions >= 1)) throw new Error(`LibreOffice conversions at once must be a whole number of at least 1 (${conversions})`);
    this.queue = new FairQueue(limits, conversions);
    const maxRssMb = options.maxRssMb ?? LIBREOFFICE_DEFAULTS.maxRssMb;
    if (!(Number.isFinite(maxRssMb) && maxRssMb >= 64)) throw new Error(`LibreOffice's memory limit must be a number of at least 64 MB (${maxRssMb})`);
    this.maxRssBytes = maxRssMb * 1024 * 1024;
  }

  /** Converts in `workspaceId`'s turn; rejects with `QueueFull` when that workspace already has its share waiting. */
  convert(docx: string, workspaceId: string): Promise<string> {
    return this.queue.run(workspaceId, () => this.convertNow(docx));
  }

  /** Converts and returns the path of the PDF, in a folder the caller removes with `cleanup`. */
  private async convertNow(docx: string): Promise<string> {
    const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'formsign-soffice-'));
    const input = path.join(work, 'input.docx');
    await fsp.copyFile(docx, input);
    const profile = `file://${path.join(work, 'profile')}`;
    const args = [`-env:UserInstallation=${profile}`, '--headless', '--norestore', '--nolockcheck', '--convert-to', 'pdf', '--outdir', work, input];
    // Under `timeout`, the group leader is `timeout` itself: on its deadline it kills the whole
    // group (it signals its own group), whether or not this server is still alive to do it.
    const deadlineS = Math.ceil(this.timeoutMs / 1000) + DEADLINE_GRACE_S;
    const child = spawn(
      this.timeoutBin ?? this.bin,
      this.timeoutBin ? ['-s', 'KILL', String(deadlineS), this.bin, ...args] : args,
      // Its own process group (to kill it whole) and none of the server's environment (secrets).
      { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8' } },
    );
    yieldCpu(child.pid);
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    let stopWatching = () => {};
    const overMemory = new Promise<'memory'>((resolve) => {
      if (child.pid !== undefined) stopWatching = watchGroup(child.pid, this.maxRssBytes, () => resolve('memory'));
    });
    try {
      const outcome = await Promise.race([exited, timedOut, overMemory]);
      if (outcome === 'timeout') {
        killGroup(child.pid);
        throw new UnreadableDocument(`LibreOffice did not convert the DOCX within ${this.timeoutMs / 1000} s`);
      }
      if (outcome === 'memory') {
        killGroup(child.pid);
        throw new UnreadableDocument(`converting the DOCX needs more than ${Math.round(this.maxRssBytes / 1024 / 1024)} MB of memory, more than is allowed for one file`);
      }
      const pdf = path.join(work, 'input.pdf');
      if (outcome !== 0 || !fs.existsSync(pdf)) throw new UnreadableDocument('LibreOffice could not convert the DOCX to PDF');
      return pdf;
    } catch (error) {
      // The group first: a member still running could write into the folder once it is removed.
      killGroup(child.pid);
      await cleanup(work);
      throw error;
    } finally {
      clearTimeout(timer);
      stopWatching();
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
