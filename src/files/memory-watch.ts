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
export function residentBytes(pid: number): Promise<number | null> {
  return statusBytes(pid);
}

/**
 * The resident memory of process `pid` (Linux), in bytes, while it is still of process group
 * `pgid` (`NSpgid` of its status, where the kernel gives it: a pid freed and taken by another
 * process is not counted); `null` when it is gone or cannot be read.
 */
export function groupMemberBytes(pid: number, pgid: number): Promise<number | null> {
  return statusBytes(pid, pgid);
}

/** `VmRSS` of `/proc/<pid>/status` in bytes (when `pgid` is given, only while `NSpgid` names it); `null` otherwise. */
async function statusBytes(pid: number, pgid?: number): Promise<number | null> {
  try {
    const status = await fsp.readFile(`/proc/${pid}/status`, 'latin1');
    if (pgid !== undefined) {
      const group = /^NSpgid:\s+(\d+)/m.exec(status);
      if (group && Number(group[1]) !== pgid) return null;
    }
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return kb ? Number(kb[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * The processes of process group `pgid` (Linux: every `/proc/<pid>/stat` whose group is it, among
 * the pids of at least `fromPid`); empty when they cannot be read. LibreOffice's `soffice` is a
 * script that starts `oosplash`, which starts `soffice.bin`: the group, made at spawn, holds them
 * all. The files are read 16 at a time, so that a host of thousands of processes does not fill
 * libuv's thread pool, which the server's own file, hashing and compression work shares.
 */
export async function groupProcesses(pgid: number, fromPid = 0): Promise<number[]> {
  let entries: string[];
  try {
    entries = await fsp.readdir('/proc');
  } catch {
    return [];
  }
  const pids = entries.filter((entry) => /^\d+$/.test(entry) && Number(entry) >= fromPid);
  const found: number[] = [];
  for (let at = 0; at < pids.length; at += 16) {
    await Promise.all(
      pids.slice(at, at + 16).map(async (entry) => {
        try {
          const stat = await fsp.readFile(`/proc/${entry}/stat`, 'latin1');
          // pid (comm) state ppid pgrp …: the command may hold spaces and parentheses.
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          if (Number(fields[2]) === pgid) found.push(Number(entry));
        } catch {
          // gone meanwhile
        }
      }),
    );
  }
  return found;
}

/**
 * Samples the resident memory of all of process group `pgid` every `everyMs`, and calls `over`
 * (once) when the group's sum passes `limitBytes`; returns a function that stops watching. The
 * group's members are looked for (a pass over the processes' `/proc/<pid>/stat`) at each of the
 * first `eagerSamples` samples (LibreOffice's `soffice.bin`, which holds the memory, starts about
 * 0.3 s after the spawn, the script and `oosplash` before it), then every `scanEvery` samples. A
 * pass reads only the pids from the leader's on (a process started later has a larger pid unless
 * pids wrapped around), and every tenth pass all of them. A member is given nice 10 when first seen (`yieldCpu`: a process that a
 * script started before the priority was set on the script would not have it). Linux only.
 * Sampling every 250 ms with a pass a second costs the server about 1 % of a core while a
 * conversion runs (a pass over every process read about 90 small files here: 5 ms of CPU); a pass
 * every 100 ms took a tenth of a core.
 */
export function watchGroup(pgid: number, limitBytes: number, over: (rssBytes: number) => void, everyMs = 250, scanEvery = 4, eagerSamples = 8): () => void {
  let reading = false;
  let stopped = false;
  let samples = 0;
  let passes = 0;
  const members = new Set<number>();
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const sample = async () => {
    if (reading || stopped) return;
    reading = true;
    try {
      if (samples < eagerSamples || samples % scanEvery === 0) {
        for (const pid of await groupProcesses(pgid, passes++ % 10 === 9 ? 0 : pgid)) {
          if (members.has(pid)) continue;
          members.add(pid);
          yieldCpu(pid);
        }
      }
      samples++;
      let sum = 0;
      for (const pid of members) {
        const rss = await groupMemberBytes(pid, pgid);
        if (rss === null) members.delete(pid); // gone (or its pid now another process's)
        else sum += rss;
      }
      if (!stopped && sum > limitBytes) {
        stop();
        over(sum);
      }
    } finally {
      reading = false;
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  timer.unref();
  void sample();
  return stop;
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
