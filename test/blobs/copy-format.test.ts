import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { copiedByteas } from '../../src/blobs/postgres.js';

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
  it('gives the values in order, an empty one, none when there is no row; a header extension is skipped', () => {
    const a = Buffer.from([0, 1, 2, 255, 0xff, 0xff]);
    const b = Buffer.from('second row');
    const read = copiedByteas(copy([a, Buffer.alloc(0), b]));
    assert.equal(read.length, 3);
    assert.ok(read[0]!.equals(a) && read[1]!.length === 0 && read[2]!.equals(b));
    assert.deepEqual(copiedByteas(copy([])), []);
    const extended = copiedByteas(copy([a], Buffer.from('ext')));
    assert.ok(extended.length === 1 && extended[0]!.equals(a));
    // Bits 0–15 of the flags are compatible changes: ignored.
    const flagged = copy([a]);
    flagged.writeUInt32BE(0x8001, 11);
    assert.ok(copiedByteas(flagged)[0]!.equals(a));
  });

  it('refuses what is not whole rows of one value: truncated, two fields, another signature, a null value, a critical flag (OIDs)', () => {
    const whole = copy([Buffer.from('abcdef'), Buffer.from('ghi')]);
    for (const cut of [0, 5, 20, 28, whole.length - 3, whole.length - 1]) assert.throws(() => copiedByteas(whole.subarray(0, cut)), /malformed/, `cut at ${cut}`);
    const twoFields = Buffer.concat([whole.subarray(0, 19), Buffer.from([0, 2, 0, 0, 0, 1, 0x61, 0, 0, 0, 1, 0x62, 0xff, 0xff])]);
    assert.throws(() => copiedByteas(twoFields), /malformed/);
    const other = Buffer.from(whole);
    other[0] = 0x51;
    assert.throws(() => copiedByteas(other), /malformed/);
    const nulled = Buffer.concat([whole.subarray(0, 19), Buffer.from([0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])]);
    assert.throws(() => copiedByteas(nulled), /malformed/);
    for (const bit of [16, 17, 31]) {
      const critical = Buffer.from(whole);
      critical.writeUInt32BE((1 << bit) >>> 0, 11);
      assert.throws(() => copiedByteas(critical), /malformed/, `flag bit ${bit} (16: OIDs)`);
    }
    assert.throws(() => copiedByteas(Buffer.concat([copy([]), Buffer.from([0])])), /malformed/, 'bytes after the trailer');
  });
});
