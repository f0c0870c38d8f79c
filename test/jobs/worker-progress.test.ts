import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProgressWriter } from '../../src/jobs/worker.js';

/** A write that ends when the test says so, recording what it was asked and how many ran at once. */
function recorder() {
  const writes: Array<{ done: number; total: number; at: number }> = [];
  const pending: Array<() => void> = [];
  let running = 0;
  let most = 0;
  const write = (done: number, total: number) => {
    writes.push({ done, total, at: Date.now() });
    running++;
    most = Math.max(most, running);
    return new Promise<void>((resolve) =>
      pending.push(() => {
        running--;
        resolve();
      }),
    );
  };
  /** Ends the oldest write in flight and lets its follow-up (if any) start. */
  const finishOne = async () => {
    pending.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { writes, write, finishOne, most: () => most, inFlight: () => pending.length };
}

describe('progress writes of a running job', () => {
  it('the first report at once; while a write is in flight only the latest is kept; the last page without waiting', async () => {
    const r = recorder();
    const progress = new ProgressWriter(r.write, 60_000);
    progress.report(1, 100);
    assert.deepEqual(r.writes.map((w) => [w.done, w.total]), [[1, 100]], 'the first report is written at once');
    for (let page = 2; page <= 99; page++) progress.report(page, 100);
    assert.equal(r.writes.length, 1, 'nothing more while one is in flight');
    await r.finishOne();
    assert.equal(r.writes.length, 1, 'page 99 waits for the interval');
    progress.report(100, 100);
    assert.deepEqual(r.writes.map((w) => [w.done, w.total]), [[1, 100], [100, 100]], 'the last page is written at once, the ones between dropped');
    progress.report(100, 100);
    assert.equal(r.writes.length, 2, 'not two at a time, even for the last page');
    await r.finishOne();
    assert.deepEqual(r.writes.map((w) => w.done), [1, 100, 100]);
    await r.finishOne();
    assert.equal(r.most(), 1);
    await progress.close();
  });

  it('at most one write per interval, the latest value; nothing after close, which waits for the write in flight', async () => {
    const r = recorder();
    const progress = new ProgressWriter(r.write, 150);
    progress.report(1, 10);
    await r.finishOne();
    progress.report(2, 10);
    progress.report(3, 10);
    assert.equal(r.writes.length, 1, 'within the interval: waits');
    for (let i = 0; i < 100 && r.writes.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(r.writes.map((w) => w.done), [1, 3], 'the latest value once the interval is over');
    assert.ok(r.writes[1]!.at - r.writes[0]!.at >= 150, `${r.writes[1]!.at - r.writes[0]!.at} ms apart`);

    progress.report(4, 10);
    let closed = false;
    const closing = progress.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(closed, false, 'close waits for the write in flight');
    await r.finishOne();
    await closing;
    progress.report(10, 10);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(r.writes.map((w) => w.done), [1, 3], 'a value not written by close is dropped, and nothing is written after it');
    assert.equal(r.most(), 1);
  });
});
