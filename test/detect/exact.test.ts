import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { degrees, PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { mergeSources } from '../../src/detect/pipeline.js';
import type { DetectedField } from '../../src/detect/types.js';
import { CORPUS, corpusFiles } from '../helpers/files.js';
import { detect } from '../helpers/layout-pdf.js';

interface TruthWidget {
  name: string;
  type: string;
  pageNumber: number;
  rect: { x: number; y: number; width: number; height: number };
  hidden: boolean;
  readOnly: boolean;
}

describe('exact detection: AcroForm widgets on the corpus', () => {
  for (const form of corpusFiles()) {
    it(`${form.name}: every widget, same page, box within 0.5 % of the page`, async () => {
      const truth = JSON.parse(fs.readFileSync(`${CORPUS}/truth/${form.name}.json`, 'utf8')) as { widgets: TruthWidget[] };
      const result = await detect(fs.readFileSync(form.file));
      // Fields to fill: every visible widget but push buttons. Hidden widgets and push buttons are
      // counted as skipped, and must be exactly the truth's.
      const fillable = truth.widgets.filter((w) => !w.hidden && w.type !== 'button');
      const used = new Set<number>();
      const close = (a: number, b: number) => Math.abs(a - b) <= 0.005;
      for (const w of fillable) {
        const i = result.fields.findIndex(
          (f, k) => !used.has(k) && f.source === 'acroform' && f.pageNumber === w.pageNumber && close(f.rect.x, w.rect.x) && close(f.rect.y, w.rect.y) && close(f.rect.width, w.rect.width) && close(f.rect.height, w.rect.height),
        );
        assert.ok(i >= 0, `widget ${JSON.stringify(w)} not found`);
        used.add(i);
        const field = result.fields[i]!;
        const expected = { text: ['short_text', 'long_text'], checkbox: ['checkbox'], radio: ['mcq', 'checkbox'], choice: ['dropdown', 'multi_select', 'short_text'], signature: ['digital_signature'] }[w.type];
        assert.ok(expected?.includes(field.type), `${w.name}: ${w.type} detected as ${field.type}`);
        assert.equal(field.isReadOnly, w.readOnly, `${w.name}: read-only carried over`);
        assert.ok(field.label.length > 0);
      }
      assert.equal(used.size, fillable.length, 'recall 1.0');
      assert.equal(result.fields.length, fillable.length, 'and nothing else');
      assert.equal(result.stats.skipped.hidden ?? 0, truth.widgets.filter((w) => w.hidden).length);
      assert.equal(result.stats.skipped.push_button ?? 0, truth.widgets.filter((w) => !w.hidden && w.type === 'button').length);
      assert.equal(result.stats.pages, form.pages.length);
    });
  }

  it('maps field kinds: labels from tooltips, radio groups to mcq with the group choices, choice lists to dropdowns', async () => {
    // ca-surgical-booking has tooltips, a radio group (Gender) and check boxes.
    const result = await detect(fs.readFileSync(`${CORPUS}/forms/ca-surgical-booking.pdf`));
    const gender = result.fields.filter((f) => f.label.startsWith('Gender'));
    assert.ok(gender.length >= 2);
    for (const g of gender) {
      assert.equal(g.type, 'mcq');
      assert.ok(g.options.choices!.length >= 2);
      assert.ok(g.options.choices!.includes(/\((.*)\)$/.exec(g.label)![1]!), `${g.label} is one of ${g.options.choices}`);
    }
    const irs = await detect(fs.readFileSync(`${CORPUS}/forms/irs-f1310-offset.pdf`));
    const state = irs.fields.find((f) => f.label === 'State');
    assert.equal(state?.type, 'dropdown');
    assert.ok(state!.options.choices!.includes('AL'));
    assert.ok(irs.fields.some((f) => f.label === 'Calendar year.'), 'tooltip (TU) before the field name');
  });
});

/** A PDF with text runs drawn at given places (one `drawText` per run). */
async function tagPdf(pages: Array<{ runs: Array<{ text: string; x: number; y: number; size?: number }>; rotate?: number; cropBox?: [number, number, number, number] }>) {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const spec of pages) {
    const page = doc.addPage([612, 792]);
    for (const run of spec.runs) page.drawText(run.text, { x: run.x, y: run.y, size: run.size ?? 12, font });
    if (spec.rotate) page.setRotation(degrees(spec.rotate));
    if (spec.cropBox) page.setCropBox(...spec.cropBox);
  }
  return { bytes: Buffer.from(await doc.save()), width: (text: string, size = 12) => font.widthOfTextAtSize(text, size) };
}

describe('exact detection: text tags', () => {
  it('finds tags, also split across runs, with type, role and required, placed on their text', async () => {
    const first = '{{Client signature;type=digital_signature;';
    const second = 'role=signer_1;required=true}}';
    const probe = await tagPdf([]);
    const { bytes } = await tagPdf([
      {
        runs: [
          { text: 'Signed:', x: 72, y: 700 },
          { text: first, x: 120, y: 700 },
          { text: second, x: 120 + probe.width(first), y: 700 },
          { text: '{{Date;type=date}}', x: 72, y: 600 },
        ],
      },
    ]);
    const result = await detect(bytes);
    assert.deepEqual(result.stats.warnings, []);
    const [sig, date] = result.fields;
    assert.equal(result.fields.length, 2);
    assert.deepEqual(
      { type: sig!.type, label: sig!.label, role: sig!.assigneeRole, required: sig!.isRequired, source: sig!.source, page: sig!.pageNumber },
      { type: 'digital_signature', label: 'Client signature', role: 'signer_1', required: true, source: 'text_tag', page: 1 },
    );
    // The box spans both runs: from x = 120 to the end of the second run, on the baseline at 700.
    const end = 120 + probe.width(first) + probe.width(second);
    assert.ok(Math.abs(sig!.rect.x - 120 / 612) < 0.002, `x ${sig!.rect.x}`);
    assert.ok(Math.abs(sig!.rect.x + sig!.rect.width - end / 612) < 0.002, `right ${sig!.rect.x + sig!.rect.width}`);
    assert.ok(sig!.rect.y < (792 - 700) / 792 && sig!.rect.y + sig!.rect.height > (792 - 700) / 792, 'covers the baseline');
    assert.ok(Math.abs(sig!.rect.height - (12 * 1.2) / 792) < 0.002);
    assert.deepEqual([date!.type, date!.label, date!.assigneeRole, date!.isRequired], ['date', 'Date', null, false]);
  });

  it('places a tag that shares its text run with other text where the tag itself is', async () => {
    const prefix = 'WWWWWWWW MMMMMM iiii signature: ';
    const tag = '{{Sign;type=signature}}';
    const { bytes, width } = await tagPdf([{ runs: [{ text: prefix + tag, x: 72, y: 500 }] }]);
    const result = await detect(bytes);
    assert.equal(result.fields.length, 1);
    const rect = result.fields[0]!.rect;
    // One run: the tag starts after the prefix's real advance, not after an even share per character.
    assert.ok(Math.abs(rect.x - (72 + width(prefix)) / 612) < 0.002, `x ${rect.x}, expected ${(72 + width(prefix)) / 612}`);
    assert.ok(Math.abs(rect.width - width(tag) / 612) < 0.002, `width ${rect.width}`);
  });

  it('places tags on rotated pages and pages with an offset crop box', async () => {
    const tag = '{{Initials;type=initials}}';
    const { bytes, width } = await tagPdf([
      { runs: [{ text: tag, x: 100, y: 300 }], rotate: 90 },
      { runs: [{ text: tag, x: 100, y: 300 }], cropBox: [50, 100, 500, 600] },
      { runs: [{ text: tag, x: 100, y: 300 }], rotate: 270 },
    ]);
    const result = await detect(bytes);
    assert.equal(result.fields.length, 3);
    const w = width(tag);
    const [turned, cropped, back] = result.fields.sort((a, b) => a.pageNumber - b.pageNumber) as [DetectedField, DetectedField, DetectedField];
    // /Rotate 90: displayed 792 wide, 612 high; a point (x, y) of the page shows at (y, x).
    assert.ok(Math.abs(turned.rect.y - 100 / 612) < 0.002 && Math.abs(turned.rect.height - w / 612) < 0.002, JSON.stringify(turned.rect));
    assert.ok(turned.rect.x < 300 / 792 && turned.rect.x + turned.rect.width > 300 / 792, 'the baseline runs through the box');
    // Crop box from (50, 100), 500 × 600 (pdf-lib's x, y, width, height): top-left at (50, 700).
    assert.ok(Math.abs(cropped.rect.x - 50 / 500) < 0.002 && Math.abs(cropped.rect.width - w / 500) < 0.002, JSON.stringify(cropped.rect));
    assert.ok(cropped.rect.y < 400 / 600 && cropped.rect.y + cropped.rect.height > 400 / 600);
    // /Rotate 270: a point (x, y) shows at (792 - y, 612 - x).
    assert.ok(Math.abs(back.rect.y + back.rect.height - (612 - 100) / 612) < 0.002, JSON.stringify(back.rect));
    assert.ok(back.rect.x < (792 - 300) / 792 && back.rect.x + back.rect.width > (792 - 300) / 792);
  });

  it('reports bad tags in warnings and keeps going', async () => {
    const { bytes } = await tagPdf([
      {
        runs: [
          { text: '{{Sign;type=autograph}}', x: 72, y: 700 },
          { text: '{{Pick;type=dropdown}}', x: 72, y: 650 },
          { text: '{{Name;colour=red;required=maybe}}', x: 72, y: 600 },
          { text: '{{;type=email;role=}}', x: 72, y: 550 },
          { text: '{{Plan;type=mcq;choices=Free|Pro|Free}}', x: 72, y: 500 },
        ],
      },
    ]);
    const result = await detect(bytes);
    assert.deepEqual(result.fields.map((f) => [f.label, f.type, f.isRequired, f.assigneeRole]), [['Name', 'short_text', false, null], ['Email', 'email', false, null], ['Plan', 'mcq', false, null]]);
    assert.deepEqual(result.fields[2]!.options, { choices: ['Free', 'Pro'] });
    const warnings = result.stats.warnings.join('\n');
    assert.match(warnings, /page 1: tag "\{\{Sign;type=autograph\}\}": unknown type "autograph"; the tag is left out/);
    assert.match(warnings, /type dropdown needs choices/);
    assert.match(warnings, /unknown key "colour" ignored/);
    assert.match(warnings, /required must be true or false, not "maybe"/);
    assert.match(warnings, /role must be 1 to 100 characters/);
  });

  it('a box found by two sources is kept once, from the more exact one', () => {
    const field = (source: DetectedField['source'], x: number): DetectedField => ({
      type: 'short_text', label: source, pageNumber: 1, rect: { x, y: 0.1, width: 0.2, height: 0.05 }, confidence: 1, source, assigneeRole: null, isRequired: false, isReadOnly: false, options: {},
    });
    const merged = mergeSources([field('text_tag', 0.11), field('acroform', 0.1), field('acroform', 0.1), field('text_tag', 0.6)]);
    assert.deepEqual(merged.fields.map((f) => [f.source, f.rect.x]), [['acroform', 0.1], ['acroform', 0.1], ['text_tag', 0.6]]);
    assert.equal(merged.duplicates, 1);
  });
});
