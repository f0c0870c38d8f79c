/**
 * Attacks of issue 14 on files and jobs (#3, #5, #6), each under the prober of stall-lib.ts
 * (worst latency of /healthz and of workspace B's read, the server's RSS):
 *
 * - #3 DOCX scanning: four DOCX at once whose relationships never close a tag (the shape that
 *   made the old regular expressions quadratic), then four well-formed DOCX with a 48 MB
 *   document.xml each (scanned to the end).
 * - #5 PDFs whose one content stream inflates to 1 GiB and to 3 GiB, as parse jobs: the job must
 *   fail (`unreadable_document`) with the server's RSS ≤ idle + 512 MB; the detection process's
 *   own peak is reported beside it.
 * - #6 fairness: workspace A queues three 1,000-page parse jobs, then B one 1-page job; A uploads
 *   four 10,000-page PDFs at once, then B a 1-page PDF. B's wait is reported in units of A's items
 *   (goal: at most one).
 * - #6c a 50 MB PDF padded after its last `startxref` (a 575 KB form of ../shared/corpus, then
 *   spaces, then `%%EOF`): A uploads it, then B a 1-page PDF; how long each upload takes (pdf.js searched for
 *   the `startxref` back through the padding a range at a time, 34 s of the one PDF reader).
 * - #6d the same with a 50 MB PDF whose page is in an object stream with a wrong `/Length` (pdf.js
 *   searches it for `endstream`, starting again after each range it lacked: 43 s).
 * - #6e a DOCX that LibreOffice takes about a minute to convert (16 MB of paragraphs in document.xml):
 *   A uploads it, then B a one-page DOCX; how long each upload takes (with one conversion at a
 *   time, B's waited for A's). Run only where LibreOffice is installed, on a server started with it.
 * - #7 the largest result: a parse job on 90 pages of label-and-rule pairs (far more fields than the
 *   5,000 a result keeps), then its result read 100 at a time with `Accept-Encoding: br`, three
 *   times (the answers read raw).
 * - #8 the largest document: 5,000 fields (the most a document holds), read in the same way.
 * - #9 the longest documents: 100 documents of 10,000 pages (their rows copied straight into the
 *   database from one uploaded PDF), listed one list at a time (`GET /documents?limit=100`), 10
 *   times: 27 MB of page sizes a list, so what one list holds the event loop for.
 * - #9b the same list read by 100 clients at once, with `Accept-Encoding: br` (read raw), each
 *   trying again after `Retry-After` when refused (429 / 503) until it has its list: 2.7 GB of
 *   JSON made and compressed, so what many such lists hold the server and its memory for.
 *
 *   npm run build && node --import tsx bench/stall-files.ts      (FORMSIGN_TEST_DB=postgres for PostgreSQL)
 */
import fs from 'node:fs';
import http from 'node:http';
import { drawPdf, LABELS_AND_RULES } from '../test/helpers/layout-pdf.js';
import { newId } from '../src/domain/ids.js';
import { findSoffice } from '../src/files/libreoffice.js';
import { createStore } from '../src/store/db.js';
import { bigDocx, CORPUS, inflatingPdf, makeDocx, makePdf, pageInLongObjectStream } from '../test/helpers/files.js';
import { compressedReads, printReport, rssOf, startServer, underAttack, type AttackRow, type StallServer } from './stall-lib.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function upload(server: StallServer, key: string, name: string, data: Buffer): Promise<{ status: number; body: { data?: { id: string }; code?: string; hint?: string } }> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.length)]), name);
  const res = await fetch(`${server.base}/api/v1/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, body: (await res.json()) as { data?: { id: string } } };
}

interface Job {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
}

async function startJob(server: StallServer, key: string, documentId: string): Promise<Job> {
  const res = await fetch(`${server.base}/api/v1/documents/${documentId}/parse-jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ applyMode: 'preview' }),
  });
  if (res.status !== 202) throw new Error(`parse job: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: Job }).data;
}

async function finished(server: StallServer, key: string, documentId: string, jobId: string): Promise<Job> {
  for (;;) {
    const res = await fetch(`${server.base}/api/v1/documents/${documentId}/parse-jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } });
    const job = ((await res.json()) as { data: Job }).data;
    if (job.status === 'completed' || job.status === 'failed') return job;
    await sleep(200);
  }
}

/**
 * 100 clients at once each read `path` (`Accept-Encoding: br`, the answer read raw) until they have
 * it whole: a refusal (429 or 503) is tried again after its `Retry-After`. Any other answer, or a
 * cut connection, counts as failed.
 */
async function listsAtOnce(server: StallServer, path: string): Promise<{ outcome: string; ok: boolean }> {
  let refused = 0;
  let failed = 0;
  let sent = 0;
  const readOnce = () =>
    new Promise<{ status: number; retryAfter: number }>((resolve) => {
      const request = http.get(`${server.base}${path}`, { headers: { authorization: `Bearer ${server.keyA}`, 'accept-encoding': 'br' } }, (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => {
          if (response.statusCode === 200) sent = bytes;
          resolve({ status: response.statusCode ?? 0, retryAfter: Number(response.headers['retry-after'] ?? 1) });
        });
        response.on('error', () => resolve({ status: 0, retryAfter: 0 }));
      });
      request.on('error', () => resolve({ status: 0, retryAfter: 0 }));
    });
  const times: number[] = [];
  const client = async () => {
    const started = performance.now();
    for (;;) {
      const { status, retryAfter } = await readOnce();
      if (status === 429 || status === 503) {
        refused++;
        await sleep(retryAfter * 1000);
        continue;
      }
      if (status !== 200) failed++;
      times.push(performance.now() - started);
      return;
    }
  };
  await Promise.all(Array.from({ length: 100 }, client));
  const sorted = [...times].sort((a, b) => a - b);
  return {
    outcome: `${(sent / 1024).toFixed(0)} KiB sent a list (br); 100 lists had, ${refused} refusals tried again (each client until it had its list: median ${sorted[50]!.toFixed(0)} ms, worst ${sorted[99]!.toFixed(0)} ms), ${failed} failed`,
    ok: failed === 0,
  };
}

/** The peak RSS of the server's detection processes while `work` runs. */
async function detectionPeak<T>(server: StallServer, work: () => Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = 0;
  const children = () => {
    try {
      return fs.readdirSync(`/proc/${server.pid}/task`).flatMap((tid) => fs.readFileSync(`/proc/${server.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      return [];
    }
  };
  const timer = setInterval(() => {
    for (const pid of children()) {
      let cmdline = '';
      try {
        cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      if (cmdline.includes('detect/thread')) peak = Math.max(peak, rssOf(pid));
    }
  }, 20);
  try {
    return { value: await work(), peak };
  } finally {
    clearInterval(timer);
  }
}

const MB = 1024 * 1024;
const mb = (bytes: number) => `${Math.round(bytes / MB)} MB`;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

console.log('making the attack files…');
const openTags = await makeDocx({ extra: [{ name: 'word/_rels/document.xml.rels', data: '<Relationships>' + '<Relationship Id="r" '.repeat(50_000), compress: false }] });
const wideDocx = await bigDocx(48 * MB);
const longDocx = await bigDocx(16 * MB);
const oneDocx = await makeDocx();
const inflating = { 1: await inflatingPdf(1024 ** 3), 3: await inflatingPdf(3 * 1024 ** 3) };
const onePage = await makePdf([{ width: 612, height: 792 }]);
const thousandPages = await makePdf(Array.from({ length: 1_000 }, () => ({ width: 612, height: 792 })));
const tenThousandPages = await makePdf(Array.from({ length: 10_000 }, () => ({ width: 612, height: 792 })));
const form = fs.readFileSync(`${CORPUS}/forms/ca-cannabis-duty-return.pdf`);
// Ending with `%%EOF`, as an upload must (a file cut off is refused before it is read).
const paddedForm = Buffer.concat([form, Buffer.alloc(50 * MB - 4_096 - form.length, 0x20), Buffer.from('\n%%EOF\n')]);
const longObjectStream = pageInLongObjectStream(50 * MB - 4_096);
console.log(`DOCX: open tags ${openTags.length} B, wide ${mb(wideDocx.length)}; inflating PDFs ${inflating[1].length} B and ${inflating[3].length} B; 1,000 pages ${mb(thousandPages.length)}; 10,000 pages ${mb(tenThousandPages.length)}`);

/** `BENCH_ONLY=<regex>` runs only the attacks whose name matches (the baseline always runs). */
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
const server = await startServer();
const rows: AttackRow[] = [];
/**
 * `underAttack`, with how long the server process waited for a CPU (run-queue time in
 * /proc/<pid>/schedstat) and how much CPU it used: on a shared machine a probe's worst latency is
 * often the server waiting for a core, not its event loop being blocked.
 */
const schedstat = (pid: number) => fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number) as [number, number, number];
const attack: typeof underAttack = async (srv, name, run, options) => {
  if (only && !only.test(name) && !name.startsWith('baseline')) return null as unknown as AttackRow;
  return underAttack(
    srv,
    name,
    async () => {
      const [cpu0, wait0] = schedstat(srv.pid);
      const result = await run();
      const [cpu1, wait1] = schedstat(srv.pid);
      const note = `; the server used ${((cpu1 - cpu0) / 1e6).toFixed(0)} ms of CPU and waited ${((wait1 - wait0) / 1e6).toFixed(0)} ms for one`;
      return typeof result === 'string' ? result + note : { ...result, outcome: result.outcome + note };
    },
    options,
  );
};
try {
  rows.push(await attack(server, 'baseline: no attack (3 s)', async () => (await sleep(3_000), 'idle')));

  rows.push(
    await attack(server, '#3 4 DOCX at once, relationships never closing a tag (1 MB part)', async () => {
      const started = performance.now();
      const results = await Promise.all([1, 2, 3, 4].map((i) => upload(server, server.keyA, `open-${i}.docx`, openTags)));
      const codes = results.map((r) => `${r.status} ${r.body.code ?? ''}`.trim());
      return { outcome: `answers ${codes.join(', ')} in ${s(performance.now() - started)}`, ok: results.every((r) => r.status === 422) };
    }),
  );

  rows.push(
    await attack(server, '#3 4 DOCX at once, 48 MB document.xml each (scanned to the end)', async () => {
      const started = performance.now();
      const results = await Promise.all([1, 2, 3, 4].map((i) => upload(server, server.keyA, `wide-${i}.docx`, wideDocx)));
      return { outcome: `answers ${results.map((r) => r.status).join(', ')} in ${s(performance.now() - started)} (${mb(4 * 48 * MB)} of XML scanned)`, ok: results.every((r) => r.status === 201) };
    }),
  );

  for (const gib of [1, 3] as const) {
    rows.push(
      await attack(server, `#5 parse job on a ${(inflating[gib].length / MB).toFixed(1)} MB PDF inflating to ${gib} GiB`, async () => {
        const started = performance.now();
        const up = await upload(server, server.keyA, `inflating-${gib}.pdf`, inflating[gib]);
        if (up.status !== 201) return { outcome: `upload answered ${up.status}`, ok: false };
        const id = up.body.data!.id;
        const { value: job, peak } = await detectionPeak(server, async () => finished(server, server.keyA, id, (await startJob(server, server.keyA, id)).id));
        return {
          outcome: `job ${job.status} (${job.error?.code}: ${job.error?.message}) after ${s(performance.now() - started)}; the detection process peaked at ${mb(peak)} before it was stopped`,
          ok: job.status === 'failed' && job.error?.code === 'unreadable_document',
        };
      }),
    );
  }

  rows.push(
    await attack(server, '#6 parse queue: A queues 3 × 1,000-page jobs, then B a 1-page job', async () => {
      const a = await upload(server, server.keyA, 'a-1000.pdf', thousandPages);
      const b = await upload(server, server.keyB, 'b-1.pdf', onePage);
      if (a.status !== 201 || b.status !== 201) return { outcome: `uploads answered ${a.status}, ${b.status}`, ok: false };
      const aJobs = [];
      for (let i = 0; i < 3; i++) aJobs.push(await startJob(server, server.keyA, a.body.data!.id));
      await sleep(500);
      const bJob = await startJob(server, server.keyB, b.body.data!.id);
      const doneA = await Promise.all(aJobs.map((j) => finished(server, server.keyA, a.body.data!.id, j.id)));
      const doneB = await finished(server, server.keyB, b.body.data!.id, bJob.id);
      const t = (iso: string | null) => Date.parse(iso!);
      // B waited for the A jobs that completed after B was queued and before B started.
      const passedB = doneA.filter((j) => t(j.completedAt) > t(doneB.createdAt) && t(j.completedAt) <= t(doneB.startedAt!)).length;
      const aItem = doneA.reduce((n, j) => n + t(j.completedAt) - t(j.startedAt), 0) / doneA.length;
      const bWait = t(doneB.startedAt) - t(doneB.createdAt);
      return {
        outcome: `A's jobs took ${s(aItem)} each; B's job waited ${s(bWait)} = ${(bWait / aItem).toFixed(2)} of A's items, for ${passedB} of A's jobs to finish (oldest first: all 3), and ran ${s(t(doneB.completedAt) - t(doneB.startedAt))}`,
        ok: [...doneA, doneB].every((j) => j.status === 'completed') && passedB <= 1,
      };
    }),
  );

  rows.push(
    await attack(server, '#6 upload analysis: A uploads 4 × 10,000-page PDFs at once, then B a 1-page PDF', async () => {
      const started = performance.now();
      const aDone: number[] = [];
      const aUploads = [1, 2, 3, 4].map((i) => upload(server, server.keyA, `a-10k-${i}.pdf`, tenThousandPages).then((r) => (aDone.push(performance.now() - started), r)));
      await sleep(1_000);
      const bStarted = performance.now();
      const b = await upload(server, server.keyB, 'b-1.pdf', onePage);
      const bMs = performance.now() - bStarted;
      const aResults = await Promise.all(aUploads);
      const bDone = bStarted + bMs - started;
      // B waited for the A files whose reading ended while B's upload was open.
      const passedB = aDone.filter((t) => t > bStarted - started && t < bDone).length;
      const items = aDone.map((t, i) => t - (i === 0 ? 0 : aDone[i - 1]!)).slice(1);
      const aItem = items.reduce((n, x) => n + x, 0) / items.length;
      return {
        outcome: `A's files took ${s(aItem)} each to read (all 4 done at ${s(aDone[3]!)}); B's upload answered ${b.status} after ${s(bMs)} = ${(bMs / aItem).toFixed(2)} of A's items, waiting for ${passedB} of A's files (oldest first: all 4)`,
        ok: b.status === 201 && aResults.every((r) => r.status === 201) && passedB <= 1,
      };
    }),
  );
  for (const [tag, what, file] of [
    ['#6c', 'padded after its last startxref', paddedForm],
    ['#6d', 'whose page is in an object stream with a wrong /Length', longObjectStream],
  ] as const) {
    rows.push(
      await attack(server, `${tag} upload analysis: A uploads a ${mb(file.length)} PDF ${what}, then B a 1-page PDF`, async () => {
        const started = performance.now();
        const a = upload(server, server.keyA, 'a-hostile.pdf', file).then((r) => ({ ...r, ms: performance.now() - started }));
        await sleep(2_000);
        const bStarted = performance.now();
        const b = await upload(server, server.keyB, 'b-1.pdf', onePage);
        const bMs = performance.now() - bStarted;
        const aDone = await a;
        return {
          outcome: `A's upload answered ${aDone.status}${aDone.body.hint ? ` (${aDone.body.hint})` : ''} after ${s(aDone.ms)}; B's, sent 2 s later, ${b.status} after ${s(bMs)}`,
          ok: aDone.status === 201 && b.status === 201 && bMs < 10_000,
        };
      }),
    );
  }
  // LibreOffice is off in the attacks' server (most machines lack it); this one has it when installed.
  const name6e = '#6e DOCX conversion: A uploads a DOCX that LibreOffice takes about a minute to convert, then B a 1-page DOCX';
  const soffice = findSoffice();
  if ((!only || only.test(name6e)) && !soffice) console.log(`${name6e}: skipped, LibreOffice (soffice) is not installed`);
  if ((!only || only.test(name6e)) && soffice) {
    const withLibreOffice = await startServer({ env: { SOFFICE_PATH: soffice } });
    try {
      rows.push(
        await attack(withLibreOffice, name6e, async () => {
          const started = performance.now();
          const a = upload(withLibreOffice, withLibreOffice.keyA, 'a-long.docx', longDocx).then((r) => ({ ...r, ms: performance.now() - started }));
          await sleep(3_000);
          const bStarted = performance.now();
          const b = await upload(withLibreOffice, withLibreOffice.keyB, 'b-1.docx', oneDocx);
          const bMs = performance.now() - bStarted;
          const aDone = await a;
          return {
            outcome: `A's upload (${mb(longDocx.length)} DOCX, ${mb(16 * MB)} of text) answered ${aDone.status}${aDone.body.hint ? ` (${aDone.body.hint})` : ''} after ${s(aDone.ms)}; B's, sent 3 s later, ${b.status} after ${s(bMs)}`,
            ok: aDone.status === 201 && b.status === 201 && bMs < 15_000,
          };
        }),
      );
    } finally {
      await withLibreOffice.stop();
    }
  }
  rows.push(
    await attack(server, '#7 a parse job result of 5,000 fields read 100 at a time with Accept-Encoding: br, three times', async () => {
      const up = await upload(server, server.keyA, 'many-fields.pdf', Buffer.from(await drawPdf(Array.from({ length: 90 }, () => LABELS_AND_RULES))));
      if (up.status !== 201) return { outcome: `upload answered ${up.status}`, ok: false };
      const id = up.body.data!.id;
      const job = await finished(server, server.keyA, id, (await startJob(server, server.keyA, id)).id);
      if (job.status !== 'completed') return { outcome: `job ${job.status}`, ok: false };
      const path = `/api/v1/documents/${id}/parse-jobs/${job.id}`;
      const plain = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${server.keyA}`, 'x-no-compression': '1' } });
      const text = await plain.text();
      const fields = (JSON.parse(text) as { data: { result: { fields: unknown[] } } }).data.result.fields.length;
      const reads = await compressedReads(server, path);
      return { outcome: `${fields} fields, ${(text.length / MB).toFixed(2)} MB of JSON; ${reads.outcome}`, ok: reads.ok && fields === 5000 };
    }),
  );
  const name8 = '#8 a document with 5,000 fields read 100 at a time with Accept-Encoding: br, three times';
  if (!only || only.test(name8)) {
    // Made before the attack (5,000 fields in bulks of 500: the writes are not what is measured).
    const up = await upload(server, server.keyA, 'fields.pdf', onePage);
    if (up.status !== 201) throw new Error(`upload answered ${up.status}`);
    const id = up.body.data!.id;
    for (let batch = 0; batch < 10; batch++) {
      const fields = Array.from({ length: 500 }, (_, i) => ({
        type: 'short_text',
        label: `Field ${batch * 500 + i}: the name of the person who signs, as printed on the form`,
        pageNumber: 1,
        x: (i % 20) * 0.049,
        y: (Math.floor(i / 20) % 25) * 0.039,
        width: 0.045,
        height: 0.03,
      }));
      const res = await fetch(`${server.base}/api/v1/documents/${id}/fields/bulk`, { method: 'POST', headers: { authorization: `Bearer ${server.keyA}`, 'content-type': 'application/json' }, body: JSON.stringify({ fields }) });
      if (res.status !== 201) throw new Error(`bulk ${batch} answered ${res.status} ${(await res.text()).slice(0, 200)}`);
    }
    rows.push(
      await attack(server, name8, async () => {
        const path = `/api/v1/documents/${id}`;
        const plain = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${server.keyA}`, 'x-no-compression': '1' } });
        const text = await plain.text();
        const fields = (JSON.parse(text) as { data: { fields: unknown[] } }).data.fields.length;
        const reads = await compressedReads(server, path);
        return { outcome: `${fields} fields, ${(text.length / MB).toFixed(2)} MB of JSON; ${reads.outcome}`, ok: reads.ok && fields === 5000 };
      }),
    );
  }
  const name9 = '#9 100 documents of 10,000 pages listed one list at a time (GET /documents?limit=100), 10 times';
  const name9b = '#9b the same list of 100 documents of 10,000 pages read 100 at a time, compressed';
  if (!only || only.test(name9) || only.test(name9b)) {
    // Made before the attack: one upload, its row copied 100 times with 10,000 pages of sizes.
    const up = await upload(server, server.keyA, 'long.pdf', onePage);
    if (up.status !== 201) throw new Error(`upload answered ${up.status}`);
    const store = createStore({ databaseUrl: server.databaseUrl, sqlitePath: `${server.dataDir}/formsign.sqlite` });
    try {
      const row = await store.db.selectFrom('documents').selectAll().where('id', '=', up.body.data!.id).executeTakeFirstOrThrow();
      const pages = JSON.stringify(Array.from({ length: 10_000 }, () => ({ width: 612, height: 792 })));
      for (let i = 0; i < 100; i++) await store.db.insertInto('documents').values({ ...row, id: newId(), page_count: 10_000, page_dimensions: pages }).execute();
    } finally {
      await store.close();
    }
    if (!only || only.test(name9)) rows.push(
      await attack(server, name9, async () => {
        const times: number[] = [];
        let bytes = 0;
        let failed = 0;
        for (let round = 0; round < 10; round++) {
          const started = performance.now();
          const res = await fetch(`${server.base}/api/v1/documents?limit=100`, { headers: { authorization: `Bearer ${server.keyA}`, 'accept-encoding': 'br' } });
          const body = await res.arrayBuffer();
          if (res.status !== 200) failed++;
          bytes = body.byteLength;
          times.push(performance.now() - started);
        }
        const sorted = [...times].sort((a, b) => a - b);
        return { outcome: `10 lists of ${(bytes / MB).toFixed(1)} MB each as read (fetch decompresses) (median ${sorted[5]!.toFixed(0)} ms, worst ${sorted[9]!.toFixed(0)} ms), ${failed} not 200`, ok: failed === 0 };
      }),
    );
    if (!only || only.test(name9b)) rows.push(await attack(server, name9b, () => listsAtOnce(server, '/api/v1/documents?limit=100')));
  }
} finally {
  await server.stop();
}
process.exitCode = printReport(rows.filter(Boolean), `issue 14 #3 #5 #6: files and jobs`) ? 0 : 1;
