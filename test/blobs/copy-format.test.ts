import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { copiedBytea } from '../../src/blobs/postgres.js';

/** PostgreSQL's binary COPY of one bytea column, written by hand as the server sends it. */
function copy(rows: Buffer[], extension = Buffer.alloc(0)): Buffer {
  const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(4), Buffer.from([0, 0, 0, extension.length]), extension]);
  const tuples = rows.map((row) => {
    const head = Buffer.alloc(6);
    head.writeInt16BE(1, 0);
    head.writeInt32BE(row.length, 2);
    return Buffer.concat([head, row]);
  });
  return Buffer.concat([header, ...tuples, Buffer.from([0xff, 0xff])]);
}

describe('the postgres blob store reads binary COPY', () => {
  it('gives the one value, an empty one, or null when there is no row; a header extension is skipped', () => {
    const bytes = Buffer.from([0, 1, 2, 255, 0xff, 0xff]);
    assert.ok(copiedBytea(copy([bytes]))!.equals(bytes));
    assert.equal(copiedBytea(copy([Buffer.alloc(0)]))!.length, 0);
    assert.equal(copiedBytea(copy([])), null);
    assert.ok(copiedBytea(copy([bytes], Buffer.from('ext')))!.equals(bytes));
  });

  it('refuses what is not one whole row: truncated, two rows, another signature, a null value', () => {
    const whole = copy([Buffer.from('abcdef')]);
    for (const cut of [0, 5, 20, whole.length - 3, whole.length - 1]) assert.throws(() => copiedBytea(whole.subarray(0, cut)), /malformed/, `cut at ${cut}`);
    assert.throws(() => copiedBytea(copy([Buffer.from('a'), Buffer.from('b')])), /malformed/);
    const other = Buffer.from(whole);
    other[0] = 0x51;
    assert.throws(() => copiedBytea(other), /malformed/);
    const nulled = Buffer.concat([whole.subarray(0, 19), Buffer.from([0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])]);
    assert.throws(() => copiedBytea(nulled), /malformed/);
    const oids = Buffer.from(whole);
    oids.writeUInt32BE(1 << 16, 11);
    assert.throws(() => copiedBytea(oids), /malformed/);
    assert.throws(() => copiedBytea(Buffer.concat([copy([]), Buffer.from([0])])), /malformed/, 'bytes after the trailer');
  });
});
