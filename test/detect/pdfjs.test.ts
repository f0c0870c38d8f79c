/**
 * pdf.js as the service loads it (src/files/pdfjs.ts) and opens a file for detection
 * (src/detect/open.ts). This file loads nothing of pdf.js before its first test: the push it takes
 * below is the engine's own.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import vm from 'node:vm';
// (A type only: nothing of the module is loaded here.)
import type { ToBase64 } from '../../src/files/native-push.js';

const ENGINE_PUSH = Array.prototype.push;
const ENGINE_TO_BASE64 = (Uint8Array.prototype as { toBase64?: ToBase64 }).toBase64;
const ROOT = path.resolve(import.meta.dirname, '../..');

/** Every .ts file under `dir` (relative to the repository). */
const sources = (dir: string): string[] =>
  fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });

describe('pdf.js as the service loads it', () => {
  it("keeps the engine's Array.prototype.push, which core-js replaced while pdf.js loaded", async () => {
    assert.equal('__core-js_shared__' in globalThis, false, 'nothing has loaded core-js yet');
    const { NATIVE_PUSH_RESTORED, pdfjs } = await import('../../src/files/pdfjs.js');
    assert.equal('__core-js_shared__' in globalThis, true, "pdf.js's core-js ran");
    assert.equal(NATIVE_PUSH_RESTORED, true);
    assert.equal(Array.prototype.push, ENGINE_PUSH);
    const attributes = Object.getOwnPropertyDescriptor(Array.prototype, 'push')!;
    assert.deepEqual([attributes.writable, attributes.enumerable, attributes.configurable], [true, false, true]);
    // The worker code was loaded with the module, not on the first document: reading one changes nothing.
    assert.ok((globalThis as { pdfjsWorker?: unknown }).pdfjsWorker);
    const { PDFDocument } = await import('@cantoo/pdf-lib');
    const doc = await PDFDocument.create();
    doc.addPage().drawRectangle({ x: 50, y: 50, width: 100, height: 20, borderWidth: 1 });
    const read = await pdfjs.getDocument({ data: await doc.save(), verbosity: 0 }).promise;
    await (await read.getPage(1)).getOperatorList();
    await read.destroy();
    assert.equal(Array.prototype.push, ENGINE_PUSH);
  });

  it("replaces core-js's Uint8Array.prototype.toBase64 with one on Node's encoder that gives the same strings and errors", async () => {
    const { CORE_JS_TO_BASE64 } = await import('../../src/files/pdfjs.js');
    const installed = (Uint8Array.prototype as { toBase64?: ToBase64 }).toBase64!;
    if (ENGINE_TO_BASE64) {
      // An engine with its own: that one stays (or is put back).
      assert.equal(installed, ENGINE_TO_BASE64);
      return;
    }
    assert.ok(CORE_JS_TO_BASE64, "core-js added its toBase64 while pdf.js loaded (Node 20 has none)");
    assert.notEqual(installed, CORE_JS_TO_BASE64);
    const attributes = Object.getOwnPropertyDescriptor(Uint8Array.prototype, 'toBase64')!;
    assert.deepEqual([attributes.writable, attributes.enumerable, attributes.configurable], [true, false, true]);
    const bytes = new Uint8Array(70_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919 + (i >> 3)) & 0xff;
    const views = [0, 1, 2, 3, 4, 5, 31, 32, 33].map((n) => bytes.subarray(3, 3 + n));
    views.push(bytes, bytes.subarray(5, 65_537));
    const options = [undefined, {}, { alphabet: 'base64' }, { alphabet: 'base64url' }, { omitPadding: true }, { alphabet: 'base64url', omitPadding: true }, { alphabet: 'base64', omitPadding: false }];
    for (const view of views) {
      for (const o of options) assert.equal(installed.call(view, o), CORE_JS_TO_BASE64.call(view, o), `${view.length} bytes, ${JSON.stringify(o)}`);
    }
    // The view's own bytes, not its buffer's.
    assert.equal(installed.call(bytes.subarray(3, 6)), Buffer.from(bytes.subarray(3, 6)).toString('base64'));
    // A function is an object for the options; a Uint8Array of another realm is one; no declared parameter.
    const asOptions = Object.assign(() => 0, { alphabet: 'base64url' });
    assert.equal(installed.call(views[4]!, asOptions as object), CORE_JS_TO_BASE64.call(views[4]!, asOptions as object));
    const foreign = vm.runInNewContext('new Uint8Array([250, 251, 252, 253])') as Uint8Array;
    assert.equal(installed.call(foreign), CORE_JS_TO_BASE64.call(foreign));
    assert.equal(installed.length, CORE_JS_TO_BASE64.length);
    const detached = new Uint8Array(8);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    for (const [self, o] of [[bytes, { alphabet: 'hex' }], [bytes, null], [bytes, 'base64'], [new Uint16Array(4), undefined], [{ length: 3 }, undefined], [detached, undefined]] as const) {
      assert.throws(() => CORE_JS_TO_BASE64.call(self as Uint8Array, o as object), TypeError);
      assert.throws(() => installed.call(self as Uint8Array, o as object), TypeError);
    }
  });

  it("is imported from src/files/pdfjs.ts everywhere: no other module of src/, scripts/, bench/ or test/ names pdf.js's own", () => {
    // Any string naming a module of pdfjs-dist (also in a variable or a template), but its type declarations.
    const named = /['"`]pdfjs-dist(?:['"`]|\/(?!types\/))/;
    const offenders = ['src', 'scripts', 'bench', 'test']
      .flatMap(sources)
      .filter((f) => f !== path.join('src', 'files', 'pdfjs.ts') && f !== path.join('test', 'detect', 'pdfjs.test.ts') && named.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(offenders, []);
    for (const text of ["import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';", "const m = 'pdfjs-dist/legacy/build/pdf.worker.mjs';", 'await import(`pdfjs-dist/build/pdf.mjs`);', "import * as p from 'pdfjs-dist';"]) assert.ok(named.test(text), text);
    assert.ok(!named.test("import type { PDFDocumentProxy } from 'pdfjs-dist/types/src/display/api.js';"));
  });

  for (const entry of ['src/detect/thread.ts', 'src/files/pdf-worker.ts']) {
    it(`leaves the engine's push in place in the process that ${entry} runs in`, async () => {
      // The entry is started as the server starts it (with an IPC channel), wrapped so that the
      // push is taken before anything is loaded and reported once the entry has said it is ready.
      const wrapper = `const push = Array.prototype.push; await import(${JSON.stringify(path.join(ROOT, entry))}); process.send({ restored: Array.prototype.push === push });`;
      const { spawn } = await import('node:child_process');
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', wrapper], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      try {
        const messages: unknown[] = [];
        const report = await new Promise<{ restored: boolean }>((resolve, reject) => {
          child.on('message', (m: unknown) => {
            messages.push(m);
            if (m && typeof m === 'object' && 'restored' in m) resolve(m as { restored: boolean });
          });
          child.once('exit', (code) => reject(new Error(`${entry} exited (${code}) after ${JSON.stringify(messages)}`)));
        });
        assert.equal(messages.length, 2, 'its own ready message, then the report');
        assert.equal(report.restored, true);
      } finally {
        child.kill();
      }
    });
  }
});

describe('a file opened for detection (DETECTION_PDF_OPTIONS)', () => {
  it('leaves images out of the operator list, and the page the detection reads is the same', async () => {
    const { pdfjs } = await import('../../src/files/pdfjs.js');
    const { DETECTION_PDF_OPTIONS } = await import('../../src/detect/open.js');
    const { readPage } = await import('../../src/detect/layout-page.js');
    const { pageFonts, readText } = await import('../../src/detect/page-text.js');
    const { PDFDocument, PDFName, StandardFonts, concatTransformationMatrix, drawObject, popGraphicsState, pushGraphicsState } = await import('@cantoo/pdf-lib');
    const doc = await PDFDocument.create();
    const page = doc.addPage([612, 792]);
    const font = await doc.embedFont(StandardFonts.Helvetica);
    // A 300 × 200 RGB image (a scan in small) under a label, a rule and a box.
    const pixels = new Uint8Array(300 * 200 * 3).map((_, i) => (i * 7) % 251);
    const image = doc.context.register(doc.context.flateStream(pixels, { Type: 'XObject', Subtype: 'Image', Width: 300, Height: 200, ColorSpace: 'DeviceRGB', BitsPerComponent: 8 }));
    page.node.setXObject(PDFName.of('Im1'), image);
    page.pushOperators(pushGraphicsState(), concatTransformationMatrix(300, 0, 0, 200, 50, 450), drawObject('Im1'), popGraphicsState());
    page.drawText('Name:', { x: 50, y: 400, size: 10, font });
    page.drawLine({ start: { x: 90, y: 398 }, end: { x: 300, y: 398 }, thickness: 0.75 });
    page.drawRectangle({ x: 50, y: 350, width: 12, height: 12, borderWidth: 0.75 });
    const bytes = await doc.save();

    const read = async (options: object) => {
      const pdf = await pdfjs.getDocument({ data: bytes.slice(), ...options }).promise;
      try {
        const p = await pdf.getPage(1);
        const viewport = p.getViewport({ scale: 1 });
        const operators = await p.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
        const images = Array.from(operators.fnArray).filter((fn) => fn === pdfjs.OPS.paintImageXObject).length;
        return { images, graphics: readPage(viewport, operators, readText(viewport, operators, pageFonts(p))) };
      } finally {
        await pdf.destroy();
      }
    };
    const decoded = await read({ verbosity: 0 });
    const detection = await read(DETECTION_PDF_OPTIONS);
    assert.equal(decoded.images, 1, "pdf.js's defaults decode the image");
    assert.equal(detection.images, 0);
    assert.ok(detection.graphics.words.some((w) => w.str === 'Name:'));
    assert.ok(detection.graphics.horizontal.length > 0 && detection.graphics.shapes.length > 0);
    assert.deepEqual(detection.graphics, decoded.graphics);
  });
});

describe('a file opened for detection (openForDetection)', () => {
  it("reads every page as pdf.js's own port does, an operator list of many chunks included, without copying it and without drawing glyphs as paths; fails on a file that is no PDF or locked", async () => {
    const { corpusFiles, makePdf } = await import('../helpers/files.js');
    const { pdfjs } = await import('../../src/files/pdfjs.js');
    const { DETECTION_PDF_OPTIONS, openForDetection } = await import('../../src/detect/open.js');
    const { readPage } = await import('../../src/detect/layout-page.js');
    const { pageFonts, readText } = await import('../../src/detect/page-text.js');
    const { PDFDocument, StandardFonts } = await import('@cantoo/pdf-lib');
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    // Three pages of one font (its glyphs are shared between pages), each over 1,000 operators: pdf.js posts such a list in several chunks
    // and empties its own arrays after each.
    for (let p = 0; p < 3; p++) {
      const page = doc.addPage([612, 792]);
      for (let i = 0; i < 150; i++) {
        const y = 770 - (i % 75) * 10;
        const x = i < 75 ? 40 : 320;
        page.drawText(`Field ${p}.${i}:`, { x, y, size: 7, font });
        page.drawLine({ start: { x: x + 60, y: y - 1 }, end: { x: x + 250, y: y - 1 }, thickness: 0.5 });
        page.drawRectangle({ x: x + 252, y: y - 1, width: 6, height: 6, borderWidth: 0.5 });
      }
    }
    const bytes = await doc.save();
    // The fonts' ids name the document (g_d<n>_f<m>), which differs between the two readings.
    const read = async (pdf: Awaited<ReturnType<typeof pdfjs.getDocument>['promise']>) => {
      const pages: string[] = [];
      let ops = 0;
      let glyphPaths = 0;
      // Glyph objects as pdf.js made them (a class of its own), not plain copies: the chunks were handed over, not cloned.
      let glyphsShared = 0;
      for (let p = 1; p <= pdf.numPages; p++) {
        const page = await pdf.getPage(p);
        const viewport = page.getViewport({ scale: 1 });
        const operators = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
        ops = Math.max(ops, operators.fnArray.length);
        const graphics = readPage(viewport, operators, readText(viewport, operators, pageFonts(page)));
        pages.push(JSON.stringify({ fnArray: operators.fnArray, argsArray: operators.argsArray, graphics }).replace(/g_d\d+_/g, 'g_'));
        // The glyphs drawn as paths for a renderer, sent to this side under `<font>_path_<glyph>`.
        let font = '';
        operators.fnArray.forEach((fn, i) => {
          const args = operators.argsArray[i] as unknown[];
          if (fn === pdfjs.OPS.setFont) font = args[0] as string;
          if (fn !== pdfjs.OPS.showText) return;
          for (const glyph of args[0] as Array<{ fontChar?: string } | number>) {
            if (typeof glyph !== 'object') continue;
            if (Object.getPrototypeOf(glyph) !== Object.prototype) glyphsShared++;
            if (glyph.fontChar && page.commonObjs.has(`${font}_path_${glyph.fontChar}`)) glyphPaths++;
          }
        });
        page.cleanup();
      }
      return { pages, ops, glyphPaths, glyphsShared };
    };
    const stockRead = async (data: Uint8Array) => {
      const stock = pdfjs.getDocument({ data, ...DETECTION_PDF_OPTIONS });
      try {
        return await read(await stock.promise);
      } finally {
        await stock.destroy();
      }
    };
    const ownRead = async (data: Uint8Array) => {
      const task = openForDetection(data);
      try {
        return await read(await task.promise);
      } finally {
        await task.destroy();
      }
    };
    const expected = await stockRead(bytes.slice());
    assert.ok(expected.ops > 2000, `${expected.ops} operators on a page`);
    assert.equal(expected.glyphsShared, 0, "pdf.js's own port copies the glyphs");
    // Twice: a second document after the first one's port is gone.
    for (let n = 0; n < 2; n++) {
      const got = await ownRead(bytes.slice());
      assert.equal(got.pages.length, 3);
      assert.ok(got.glyphsShared > 0, 'the glyphs were handed over, not copied');
      got.pages.forEach((page, i) => assert.equal(page, expected.pages[i], `page ${i + 1}`));
    }
    // Real forms, whose fonts are embedded (pdf.js has no glyphs of the standard fonts to draw in Node).
    let stockPaths = 0;
    for (const form of corpusFiles().slice(0, 3)) {
      const data = new Uint8Array(fs.readFileSync(form.file));
      const theirs = await stockRead(data.slice());
      const ours = await ownRead(data.slice());
      assert.deepEqual(ours.pages, theirs.pages, form.name);
      assert.equal(ours.glyphPaths, 0, `${form.name}: no glyph drawn as a path`);
      stockPaths += theirs.glyphPaths;
    }
    assert.ok(stockPaths > 0, "pdf.js's defaults in Node draw the glyphs as paths");
    const broken = openForDetection(new TextEncoder().encode('not a pdf at all'));
    await assert.rejects(broken.promise, { name: 'InvalidPDFException' });
    await broken.destroy();
    // thread.ts tells a locked file by this name.
    const locked = openForDetection(new Uint8Array(await makePdf([{ width: 612, height: 792 }], { userPassword: 'secret' })));
    await assert.rejects(locked.promise, { name: 'PasswordException' });
    await locked.destroy();
  });
});
