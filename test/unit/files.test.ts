import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DiskBlobStore } from '../../src/blobs/disk.js';
import { HashLocks } from '../../src/blobs/locks.js';
import { sweepBlobs } from '../../src/blobs/sweep.js';
import { inspectDocx } from '../../src/files/docx.js';
import { UnreadableDocument } from '../../src/files/errors.js';
import { LibreOfficeConverter } from '../../src/files/libreoffice.js';
import { cleanFilename, contentDisposition } from '../../src/http/routes/documents.js';
import { makeDocx } from '../helpers/files.js';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-unit-'));
}

describe('file names', () => {
  it('keeps only the base name, without control characters, at most 255 characters', () => {
    assert.equal(cleanFilename('C:\\Users\\me\\contract.pdf'), 'contract.pdf');
    assert.equal(cleanFilename('../../etc/passwd'), 'passwd');
    assert.equal(cleanFilename('a\u0000b\u001fc\u007f.pdf'), 'abc.pdf');
    assert.equal(cleanFilename(''), 'document');
    assert.equal(cleanFilename(undefined), 'document');
    assert.equal([...cleanFilename('ü'.repeat(300))].length, 255);
  });

  it('writes a Content-Disposition that no file name can break', () => {
    assert.equal(contentDisposition('a.pdf'), `attachment; filename="a.pdf"; filename*=UTF-8''a.pdf`);
    assert.equal(contentDisposition('x"; filename="evil.exe'), `attachment; filename="x_; filename=_evil.exe"; filename*=UTF-8''x%22%3B%20filename%3D%22evil.exe`);
    assert.equal(contentDisposition('Vertrag (Entwurf) ü.pdf'), `attachment; filename="Vertrag (Entwurf) _.pdf"; filename*=UTF-8''Vertrag%20%28Entwurf%29%20%C3%BC.pdf`);
  });
});

describe('DOCX inspection', () => {
  async function inspect(buffer: Buffer) {
    const dir = tempDir();
    const file = path.join(dir, 'x.docx');
    fs.writeFileSync(file, buffer);
    try {
      return await inspectDocx(file);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  }

  it('reads the page count and the first section page size', async () => {
    assert.deepEqual(await inspect(await makeDocx({ pages: 7, pageSize: { w: 16838, h: 11906 } })), { pageCount: 7, pageSize: { width: 841.9, height: 595.3 } });
    assert.deepEqual(await inspect(await makeDocx({ pages: null, pageSize: null })), { pageCount: null, pageSize: null });
  });

  it('refuses ZIP bombs, too many parts, DTDs and a missing document part', async () => {
    const cases: Array<[Promise<Buffer>, RegExp]> = [
      [makeDocx({ extra: [{ name: 'word/media/zeros.bin', data: Buffer.alloc(8 * 1024 * 1024) }] }), /compressed more than 100:1/],
      [makeDocx({ extra: [{ name: 'word/media/huge.bin', data: Buffer.alloc(70 * 1024 * 1024), compress: false }] }), /too large/],
      [makeDocx({ extra: Array.from({ length: 2001 }, (_, i) => ({ name: `word/p${i}.txt`, data: 'x' })) }), /parts; at most 2000/],
      [makeDocx({ extra: [{ name: 'word/settings.xml', data: '<?xml version="1.0"?>\n<!doctype x SYSTEM "http://example.invalid/x.dtd"><x/>' }] }), /declares a DTD or entities/],
      [makeDocx({ omitDocument: true }), /no word\/document.xml/],
      [Promise.resolve(Buffer.from('PK\u0003\u0004 not really a zip')), /not a readable ZIP/],
    ];
    for (const [buffer, message] of cases) {
      await assert.rejects(inspect(await buffer), (e: unknown) => e instanceof UnreadableDocument && message.test(e.message), String(message));
    }
  });
});

describe('LibreOffice conversion', () => {
  function fakeSoffice(body: string): { bin: string; dir: string } {
    const dir = tempDir();
    const bin = path.join(dir, 'soffice');
    fs.writeFileSync(bin, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return { bin, dir };
  }

  it('kills a conversion that hangs, with its children, and says so', async () => {
    const marker = `formsign-hang-${crypto.randomBytes(4).toString('hex')}`;
    const { bin, dir } = fakeSoffice(`sh -c 'sleep 30; echo ${marker}' & sleep 30`);
    const converter = new LibreOfficeConverter(bin, 300);
    const docx = path.join(dir, 'in.docx');
    fs.writeFileSync(docx, 'x');
    await assert.rejects(converter.convert(docx), /did not convert the DOCX within 0.3 s/);
    await new Promise((r) => setTimeout(r, 200));
    const left = execSync(`ps -eo args | grep "${marker}" | grep -v grep || true`, { encoding: 'utf8' });
    assert.equal(left.trim(), '', 'no process of the conversion is left');
    fs.rmSync(dir, { recursive: true });
  });

  it('runs one conversion at a time', async () => {
    const log = path.join(tempDir(), 'log');
    // Writes a PDF next to the input, as soffice --convert-to pdf --outdir <dir> does.
    const { bin, dir } = fakeSoffice(`for last; do :; done; echo start >> ${log}; sleep 0.2; echo end >> ${log}; out=$(dirname "$last"); printf '%%PDF-1.4\\n%%%%EOF\\n' > "$out/input.pdf"`);
    const converter = new LibreOfficeConverter(bin, 5000);
    const docx = path.join(dir, 'in.docx');
    fs.writeFileSync(docx, 'x');
    const results = await Promise.all([converter.convert(docx), converter.convert(docx), converter.convert(docx)]);
    assert.equal(results.length, 3);
    assert.deepEqual(fs.readFileSync(log, 'utf8').trim().split('\n'), ['start', 'end', 'start', 'end', 'start', 'end']);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('blob store and start-up sweep', () => {
  it('commits content-addressed blobs atomically and sweeps what no row refers to', async () => {
    const root = tempDir();
    const blobs = new DiskBlobStore(root);
    const write = async (text: string) => {
      const temp = await blobs.createTemp();
      await new Promise<void>((resolve, reject) => {
        const stream = temp.stream();
        stream.on('finish', resolve).on('error', reject);
        stream.end(text);
      });
      const sha = crypto.createHash('sha256').update(text).digest('hex');
      await blobs.commit(temp, sha);
      return sha;
    };
    const kept = await write('kept');
    const orphan = await write('orphan');
    const young = await write('young');
    const old = new Date(Date.now() - 3_600_000);
    for (const sha of [kept, orphan]) fs.utimesSync(blobs.pathOf(sha), old, old);
    // Temporary files: of a process that is gone; of an earlier process that had this pid (a
    // restarted container); of another host, recent and old; and one of this live process.
    const host = os.hostname().replace(/[^A-Za-z0-9.]/g, '_');
    const tmp = (name: string) => path.join(root, 'tmp', name);
    fs.writeFileSync(tmp(`${host}-999999999-aaaaaaaaaaaa-01`), 'dead process');
    fs.writeFileSync(tmp(`${host}-${process.pid}-bbbbbbbbbbbb-02`), 'recycled pid');
    fs.writeFileSync(tmp('otherhost-12-cccccccccccc-03'), 'another host, recent');
    fs.writeFileSync(tmp('otherhost-13-dddddddddddd-04'), 'another host, a day old');
    fs.utimesSync(tmp('otherhost-13-dddddddddddd-04'), new Date(Date.now() - 25 * 3_600_000), new Date(Date.now() - 25 * 3_600_000));
    const mine = await blobs.createTemp();
    fs.writeFileSync(mine.path, 'in flight');

    const result = await sweepBlobs(blobs, async () => new Set([kept]), 600_000);
    assert.deepEqual(result, { temps: 3, blobs: 1 });
    assert.deepEqual(fs.readdirSync(path.join(root, 'tmp')).sort(), [path.basename(mine.path), 'otherhost-12-cccccccccccc-03'].sort());
    const left = [];
    for await (const b of blobs.list()) left.push(b.sha256);
    assert.deepEqual(left.sort(), [kept, young].sort(), 'the young unreferenced blob is spared by the grace period');
    assert.ok(fs.existsSync(mine.path), "a live process's upload is left alone");
    assert.deepEqual(await sweepBlobs(blobs, async () => new Set([kept]), 0), { temps: 0, blobs: 1 });
    const opened = await blobs.open(kept);
    assert.equal(opened.size, 4);
    const chunks: Buffer[] = [];
    for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'kept');
    await assert.rejects(blobs.open(orphan), { code: 'ENOENT' });
    fs.rmSync(root, { recursive: true });
  });

  it('serialises work on the same hashes and not on different ones', async () => {
    const locks = new HashLocks();
    const order: string[] = [];
    const task = (name: string, hashes: string[], ms: number) =>
      locks.with(hashes, async () => {
        order.push(`${name}+`);
        await new Promise((r) => setTimeout(r, ms));
        order.push(`${name}-`);
      });
    await Promise.all([task('a', ['x'], 50), task('b', ['x', 'y'], 10), task('c', ['z'], 5)]);
    assert.deepEqual(order.filter((e) => e.startsWith('a') || e.startsWith('b')), ['a+', 'a-', 'b+', 'b-']);
    assert.ok(order.indexOf('c-') < order.indexOf('a-'), 'other hashes do not wait');
  });
});
