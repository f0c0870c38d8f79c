/**
 * The layout detector through the real pipeline (`detectFields`), on small flat PDFs drawn with
 * pdf-lib: one test per kind of field and per kind of printed thing that is not a field. Boxes are
 * checked in points of the displayed page (origin top-left): a field is where a person would write.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { degrees, drawObject, lineTo, moveTo, PDFDocument, PDFName, popGraphicsState, pushGraphicsState, rgb, setLineWidth, StandardFonts, stroke } from '@cantoo/pdf-lib';
import type { DetectedField } from '../../src/detect/types.js';
import { detect, drawPdf, drawUnicode, points, show, type Draw, type PageSpec } from '../helpers/layout-pdf.js';

/** Letter, portrait. */
const W = 612;
const H = 792;
/** Points: how far a box edge may be from where it should be. */
const TOL = 2;

/** The fields of a drawn PDF; every layout field has a confidence in (0, 1] and a label. */
async function fieldsOf(specs: PageSpec[]): Promise<DetectedField[]> {
  const result = await detect(await drawPdf(specs));
  for (const f of result.fields) {
    if (f.source !== 'layout') continue;
    assert.ok(f.confidence > 0 && f.confidence <= 1, `confidence ${f.confidence} in (0, 1]: ${show([f])}`);
    assert.ok(f.label.trim().length > 0, `a label: ${show([f])}`);
    for (const v of [f.rect.x, f.rect.y, f.rect.width, f.rect.height]) assert.ok(v >= 0 && v <= 1, `rect in fractions: ${JSON.stringify(f.rect)}`);
  }
  return result.fields;
}

/** The one field found (and nothing else), from the layout detector, on `pageNumber`. */
function only(fields: DetectedField[], pageNumber = 1, width = W, height = H): DetectedField {
  const on = fields.filter((f) => f.pageNumber === pageNumber);
  assert.equal(on.length, 1, `one field on page ${pageNumber}: ${show(on, width, height)}`);
  const field = on[0]!;
  assert.equal(field.source, 'layout');
  return field;
}

const near = (actual: number, expected: number, what: string, field: DetectedField, width = W, height = H, tol = TOL) =>
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual.toFixed(1)} pt, expected ${expected.toFixed(1)} ± ${tol}: ${show([field], width, height)}`);

/**
 * The field is the space just above a horizontal rule drawn from x1 to x2 at `y` (displayed
 * page, points): same x-extent, bottom on the rule, a line's height (room to write, not more).
 */
function assertAboveRule(field: DetectedField, rule: { x1: number; x2: number; y: number }, width = W, height = H): void {
  const p = points(field, width, height);
  near(p.x1, rule.x1, 'left edge', field, width, height);
  near(p.x2, rule.x2, 'right edge', field, width, height);
  near(p.y2, rule.y, 'bottom on the rule', field, width, height);
  const h = p.y2 - p.y1;
  assert.ok(h >= 8 && h <= 30, `a line's height, not ${h.toFixed(1)} pt: ${show([field], width, height)}`);
}

/** "label" then a rule to its right, its baseline at y (PDF user space); the rule 2 pt below. */
function fillIn(d: Draw, label: string, y: number, x1: number, x2: number): void {
  d.text(label, 72, y);
  d.rule(x1, x2, y - 2);
}

/** A vertical rule at x from y1 to y2 (PDF user space). */
function vrule(d: Draw, x: number, y1: number, y2: number, thickness = 1): void {
  d.page.drawLine({ start: { x, y: y1 }, end: { x, y: y2 }, thickness });
}

/** The fields on `pageNumber` in reading order: by their bottom edge (to the point), then left to right. */
function inOrder(fields: DetectedField[], pageNumber = 1): DetectedField[] {
  const bottom = (f: DetectedField) => Math.round((f.rect.y + f.rect.height) * H);
  return fields.filter((f) => f.pageNumber === pageNumber).sort((a, b) => bottom(a) - bottom(b) || a.rect.x - b.rect.x);
}

/** The advance of `text` in Helvetica at `size` (where a printed word ends). */
async function advanceOf(text: string, size: number): Promise<number> {
  const font = await (await PDFDocument.create()).embedFont(StandardFonts.Helvetica);
  return font.widthOfTextAtSize(text, size);
}

/** The comb tests' comb: "Account no." and a row of boxes 14 × 18 from x 150 to 276, displayed y 174..192: one field. */
function assertAccountComb(field: DetectedField): void {
  assert.match(field.label, /Account no/);
  assert.notEqual(field.type, 'checkbox');
  const p = points(field);
  near(p.x1, 150, 'left edge: the first box', field);
  near(p.x2, 276, 'right edge: the last box', field);
  near(p.y1, 174, 'top: the boxes', field);
  near(p.y2, 192, 'bottom: the boxes', field);
}

describe('layout detection: fields', () => {
  it('a fill-in line: "Name" and a rule on its right is one short text field just above the rule', async () => {
    const fields = await fieldsOf([{ draw: (d) => fillIn(d, 'Name', 700, 110, 300) }]);
    const field = only(fields);
    assert.equal(field.type, 'short_text');
    assert.match(field.label, /Name/);
    assert.equal(field.pageNumber, 1);
    assertAboveRule(field, { x1: 110, x2: 300, y: H - 698 });
  });

  describe('an underscore run typed as text ("Email: ____________________")', () => {
    const label = 'Email: ';
    const underscores = '_'.repeat(20);
    const draw = (d: Draw) => d.text(label + underscores, 72, 700);
    /** Where the underscores print: after the label's advance, for the underscores' advance. */
    const extent = async () => {
      const font = await (await PDFDocument.create()).embedFont(StandardFonts.Helvetica);
      const x1 = 72 + font.widthOfTextAtSize(label, 11);
      return { x1, x2: x1 + font.widthOfTextAtSize(underscores, 11) };
    };

    it('is one email field sitting on the underscores', async () => {
      const { x2 } = await extent();
      const field = only(await fieldsOf([{ draw }]));
      assert.equal(field.type, 'email');
      assert.match(field.label, /Email/);
      const p = points(field);
      // Helvetica's underscore prints about 1 pt below the baseline (displayed y = 92).
      near(p.y2, H - 700 + 1, 'bottom on the underscores', field);
      assert.ok(p.y2 - p.y1 >= 8 && p.y2 - p.y1 <= 30, show([field]));
      near(p.x2, x2, 'right edge: the end of the underscores', field);
    });

    it(
      'starts where the underscores start',
        async () => {
        const { x1 } = await extent();
        const field = only(await fieldsOf([{ draw }]));
        near(points(field).x1, x1, 'left edge: the first underscore', field);
      },
    );
  });

  it('a box with a small label at its top ("Your first name"): the field is below the label, inside the box', async () => {
    // The box: x 72..322, displayed y 152..192; the label's baseline at displayed y 162.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.box(72, 600, 250, 40);
            d.text('Your first name', 76, 630, 8);
          },
        },
      ]),
    );
    assert.equal(field.type, 'short_text');
    assert.match(field.label, /Your first name/);
    const p = points(field);
    near(p.x1, 72, 'left edge: the box', field);
    near(p.x2, 322, 'right edge: the box', field);
    near(p.y2, 192, 'bottom: the box', field);
    assert.ok(p.y1 >= 162, `below the label (baseline at 162): ${show([field])}`);
    assert.ok(p.y2 - p.y1 >= 10, `room to write: ${show([field])}`);
  });

  it('a comb: a row of 9 adjacent small boxes is ONE field over the row', async () => {
    // Boxes 14 × 18 from x 150 to 276, displayed y 174..192.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Account no.', 72, 605);
            for (let i = 0; i < 9; i++) d.box(150 + i * 14, 600, 14, 18);
          },
        },
      ]),
    );
    assertAccountComb(field);
  });

  describe('a drawn check box: a 9 pt square with "Yes" on its right', () => {
    // The square: x 72..81, displayed y 183..192.
    const draw = (d: Draw) => {
      d.box(72, 600, 9, 9);
      d.text('Yes', 86, 601);
    };

    it('is one checkbox at the square', async () => {
      const field = only(await fieldsOf([{ draw }]));
      assert.equal(field.type, 'checkbox');
      const p = points(field);
      near(p.x1, 72, 'left', field, W, H, 1);
      near(p.x2, 81, 'right', field, W, H, 1);
      near(p.y1, 183, 'top', field, W, H, 1);
      near(p.y2, 192, 'bottom', field, W, H, 1);
    });

    it('is labelled with the text on its right', async () => {
      const field = only(await fieldsOf([{ draw }]));
      assert.match(field.label, /Yes/);
    });
  });

  describe('a check box glyph in the text ("☐ Agree")', () => {
    // pdf-lib embeds TrueType fonts only with fontkit, which is not installed: the glyph is
    // written in Helvetica re-encoded to the glyph name uni2610, which pdf.js reads as ☐.
    const draw = (d: Draw) => {
      drawUnicode(d, '\u2610', 72, 700, 11);
      d.text('Agree', 86, 700);
    };

    it('is one checkbox where the glyph is', async () => {
      const field = only(await fieldsOf([{ draw }]));
      assert.equal(field.type, 'checkbox');
      const p = points(field);
      // The glyph: from x 72, 6.6 pt wide (600/1000 of 11 pt), on the baseline at displayed y 92.
      near(p.x1, 72, 'left', field);
      near(p.y2, 92, 'bottom on the baseline', field, W, H, 2.5);
      const side = p.x2 - p.x1;
      assert.ok(side >= 5 && side <= 14 && Math.abs(p.y2 - p.y1 - side) <= 2, `a square of the text's size: ${show([field])}`);
    });

    it('is labelled with the text on its right', async () => {
      const field = only(await fieldsOf([{ draw }]));
      assert.match(field.label, /Agree/);
    });

    it(
      'in ZapfDingbats too (❑ is the letter "q" of ZapfDingbats)',
        async () => {
        const field = only(
          await fieldsOf([
            {
              draw: async (d) => {
                const zapf = await d.doc.embedFont(StandardFonts.ZapfDingbats);
                d.page.drawText('\u2751', { x: 72, y: 700, size: 11, font: zapf });
                d.text('Agree', 86, 700);
              },
            },
          ]),
        );
        assert.equal(field.type, 'checkbox');
        near(points(field).x1, 72, 'left', field);
      },
    );
  });

  it('signature areas: "Signature", "Unterschrift", "Firma", "Подпись" on a line are digital signatures; "Initials" is initials', async () => {
    const cases: Array<[string, DetectedField['type']]> = [
      ['Signature', 'digital_signature'],
      ['Unterschrift', 'digital_signature'],
      ['Firma', 'digital_signature'],
      ['Подпись', 'digital_signature'],
      ['Initials', 'initials'],
    ];
    const fields = await fieldsOf(
      cases.map(([label]) => ({
        draw: (d: Draw) => {
          // Cyrillic: Helvetica re-encoded to uniXXXX glyph names (no TrueType embedding without fontkit).
          if (/[а-я]/i.test(label)) drawUnicode(d, label, 72, 700);
          else d.text(label, 72, 700);
          d.rule(150, 350, 698);
        },
      })),
    );
    for (const [i, [label, type]] of cases.entries()) {
      const field = only(fields, i + 1);
      assert.equal(field.type, type, `${label}: ${show([field])}`);
      assert.match(field.label, new RegExp(label));
      assertAboveRule(field, { x1: 150, x2: 350, y: H - 698 });
    }
  });

  it('"Signé" (French) on a line is a digital signature', async () => {
    const field = only(await fieldsOf([{ draw: (d) => fillIn(d, 'Signé', 700, 150, 350) }]));
    assert.equal(field.label, 'Signé');
    assert.equal(field.type, 'digital_signature');
    assertAboveRule(field, { x1: 150, x2: 350, y: H - 698 });
  });

  it('types from labels: "Date" is date, "Phone" is phone, "Total amount" is number', async () => {
    const cases: Array<[string, DetectedField['type']]> = [
      ['Date', 'date'],
      ['Phone', 'phone'],
      ['Total amount', 'number'],
    ];
    const fields = await fieldsOf(cases.map(([label]) => ({ draw: (d: Draw) => fillIn(d, label, 700, 150, 350) })));
    for (const [i, [label, type]] of cases.entries()) {
      const field = only(fields, i + 1);
      assert.equal(field.type, type, `${label}: ${show([field])}`);
      assert.equal(field.label, label);
      assertAboveRule(field, { x1: 150, x2: 350, y: H - 698 });
    }
  });

  it(
    'fill-in lines stacked 36 pt apart keep their own types and a line each',
    async () => {
      const fields = await fieldsOf([
        {
          draw: (d) => {
            fillIn(d, 'Date', 700, 150, 350);
            fillIn(d, 'Phone', 664, 150, 350);
            fillIn(d, 'Total amount', 628, 150, 350);
          },
        },
      ]);
      assert.deepEqual(
        fields.map((f) => [f.label, f.type]),
        [
          ['Date', 'date'],
          ['Phone', 'phone'],
          ['Total amount', 'number'],
        ],
        show(fields),
      );
      for (const [i, y] of [698, 662, 626].entries()) assertAboveRule(fields[i]!, { x1: 150, x2: 350, y: H - y });
    },
  );

  it('a tall empty box (300 × 80 pt) with a label, inside at its top or above it, is long text filling the box', async () => {
    // The box: x 72..372, displayed y 312..392.
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.box(72, 400, 300, 80);
          d.text('Comments', 76, 470, 8);
        },
      },
      {
        draw: (d) => {
          d.text('Comments', 72, 486);
          d.box(72, 400, 300, 80);
        },
      },
    ]);
    for (const pageNumber of [1, 2]) {
      const field = only(fields, pageNumber);
      assert.equal(field.type, 'long_text');
      assert.match(field.label, /Comments/);
      const p = points(field);
      near(p.x1, 72, 'left: the box', field);
      near(p.x2, 372, 'right: the box', field);
      near(p.y2, 392, 'bottom: the box', field);
      assert.ok(p.y1 >= 312 - 0.5 && p.y2 - p.y1 >= 55, `most of the box: ${show([field])}`);
    }
  });

  it('on a page turned by /Rotate 90, a fill-in line drawn upright for the reader is one field at its displayed place', async () => {
    // Displayed 792 wide, 612 high; a point (x, y) of the page shows at (y, x). Text and rule are
    // drawn turned 90° so that they read upright: "Name" at displayed (72, baseline 100), the
    // rule from displayed x 110 to 300 at displayed y 102.
    const fields = await fieldsOf([
      {
        rotate: 90,
        draw: (d) => {
          d.page.drawText('Name', { x: 100, y: 72, size: 11, font: d.font, rotate: degrees(90) });
          d.page.drawLine({ start: { x: 102, y: 110 }, end: { x: 102, y: 300 }, thickness: 1, color: rgb(0, 0, 0) });
        },
      },
    ]);
    const field = only(fields, 1, 792, 612);
    assert.equal(field.type, 'short_text');
    assert.match(field.label, /Name/);
    assertAboveRule(field, { x1: 110, x2: 300, y: 102 }, 792, 612);
  });

  it('a fill-in line drawn inside a form XObject moved by its /Matrix is one field where the matrix puts it', async () => {
    // The form draws a rule from (0, 0) to (220, 0); its /Matrix moves it to x 140..360 at y 598
    // (displayed y 194). Read without the matrix, it would sit at the page's bottom-left corner.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Full name', 72, 600);
            const form = d.doc.context.formXObject([setLineWidth(1), moveTo(0, 0), lineTo(220, 0), stroke()], { BBox: [-5, -5, 225, 5], Matrix: [1, 0, 0, 1, 140, 598] });
            d.page.node.setXObject(PDFName.of('Fm1'), d.doc.context.register(form));
            d.page.pushOperators(pushGraphicsState(), drawObject('Fm1'), popGraphicsState());
          },
        },
      ]),
    );
    assert.match(field.label, /Full name/);
    assertAboveRule(field, { x1: 140, x2: 360, y: 194 });
  });

  it('on a page with an offset crop box, a fill-in line is one field at its place on the cropped page', async () => {
    // Crop box from (50, 100), 500 × 600: a point (x, y) shows at (x - 50, 700 - y).
    const fields = await fieldsOf([{ cropBox: [50, 100, 500, 600], draw: (d) => { d.text('Name', 100, 500); d.rule(140, 340, 498); } }]);
    const field = only(fields, 1, 500, 600);
    assert.match(field.label, /Name/);
    assertAboveRule(field, { x1: 90, x2: 290, y: 202 }, 500, 600);
  });

  it('a comb of separate boxes whose tops drift by 0.5 to 1 pt is still ONE field over the row', async () => {
    // Boxes 14 × 18 from x 150 to 276, their bottoms (PDF y) 600, 600.5 or 601: displayed tops 173..174.
    const drift = [0, 0.5, 1, 0.5, 0, 1, 0.5, 0, 1];
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Account no.', 72, 605);
            for (const [i, dy] of drift.entries()) d.box(150 + i * 14, 600 + dy, 14, 18);
          },
        },
      ]),
    );
    assertAccountComb(field);
  });

  it('a comb in groups (3, 2 and 4 boxes 5 pt apart, as a social security number) is ONE field, drawn as separate boxes or as ruled groups', async () => {
    // Cells 14 × 18 from x 150: groups 150..192, 197..225, 230..286; displayed y 174..192.
    const groups = [3, 2, 4];
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.text('SSN', 72, 605);
          let x = 150;
          for (const n of groups) {
            for (let i = 0; i < n; i++) d.box(x + i * 14, 600, 14, 18);
            x += n * 14 + 5;
          }
        },
      },
      {
        // Each group one box with rules between its cells.
        draw: (d) => {
          d.text('SSN', 72, 605);
          let x = 150;
          for (const n of groups) {
            d.box(x, 600, n * 14, 18);
            for (let i = 1; i < n; i++) vrule(d, x + i * 14, 600, 618);
            x += n * 14 + 5;
          }
        },
      },
    ]);
    for (const pageNumber of [1, 2]) {
      const field = only(fields, pageNumber);
      assert.match(field.label, /SSN/);
      assert.notEqual(field.type, 'checkbox');
      const p = points(field);
      near(p.x1, 150, `page ${pageNumber}: left edge, the first group`, field);
      near(p.x2, 286, `page ${pageNumber}: right edge, the last group`, field);
      near(p.y2, 192, `page ${pageNumber}: bottom, the boxes`, field);
    }
  });

  it('two touching boxes of one size (a two-digit code) are ONE field, not two check boxes; two boxes apart with labels stay check boxes', async () => {
    const fields = await fieldsOf([
      {
        // Two 12 × 12 boxes sharing an edge: x 150..174, displayed y 180..192.
        draw: (d) => {
          d.text('Code', 72, 603);
          d.box(150, 600, 12, 12);
          d.box(162, 600, 12, 12);
        },
      },
      {
        // The same boxes 28 pt apart, each with its label on its right.
        draw: (d) => {
          d.box(150, 600, 12, 12);
          d.text('Yes', 166, 602);
          d.box(190, 600, 12, 12);
          d.text('No', 206, 602);
        },
      },
    ]);
    const field = only(fields, 1);
    assert.notEqual(field.type, 'checkbox');
    assert.match(field.label, /Code/);
    const p = points(field);
    near(p.x1, 150, 'left edge: the first box', field);
    near(p.x2, 174, 'right edge: the second box', field);
    near(p.y1, 180, 'top: the boxes', field);
    near(p.y2, 192, 'bottom: the boxes', field);
    const apart = inOrder(fields, 2);
    assert.deepEqual(apart.map((f) => [f.type, f.label]), [['checkbox', 'Yes'], ['checkbox', 'No']], show(apart));
  });

  it('Yes/No columns: the empty cells under "Yes" and "No" (29 × 12 pt) are check boxes in the middle of the cells, not text fields', async () => {
    // Columns: questions x 72..150, Yes 150..179, No 179..208; header row displayed y 192..207,
    // body rows 207..219 and 219..231.
    const fields = await fieldsOf([
      {
        draw: (d) => {
          for (const y of [600, 585, 573, 561]) d.rule(72, 208, y);
          for (const x of [72, 150, 179, 208]) vrule(d, x, 561, 600);
          d.text('Questions', 76, 589, 8);
          d.text('Yes', 158, 589, 8);
          d.text('No', 188, 589, 8);
          d.text('Do you own a car?', 76, 576, 8);
          d.text('Are you married?', 76, 564, 8);
        },
      },
    ]);
    const boxes = inOrder(fields);
    assert.equal(boxes.length, 4, `a check box per row and column, nothing else: ${show(boxes)}`);
    const cells = [
      [150, 179, 207, 219],
      [179, 208, 207, 219],
      [150, 179, 219, 231],
      [179, 208, 219, 231],
    ] as const;
    for (const [i, [x1, x2, y1, y2]] of cells.entries()) {
      const field = boxes[i]!;
      assert.equal(field.type, 'checkbox', show([field]));
      const p = points(field);
      near((p.x1 + p.x2) / 2, (x1 + x2) / 2, 'centred across the cell', field, W, H, 1);
      near((p.y1 + p.y2) / 2, (y1 + y2) / 2, 'centred down the cell', field, W, H, 1);
      const side = p.x2 - p.x1;
      assert.ok(side >= 4.5 && side < 12 && Math.abs(p.y2 - p.y1 - side) <= 0.5, `a square smaller than the cell: ${show([field])}`);
    }
  });

  it('a column of small empty square cells (9 × 11 pt) of a ruled table: each is a check box', async () => {
    // Tick column x 72..81, item column 81..140; rows displayed y 192..203, 203..214, 214..225.
    const items = ['Item one', 'Item two', 'Item three'];
    const fields = await fieldsOf([
      {
        draw: (d) => {
          for (let r = 0; r <= 3; r++) d.rule(72, 140, 600 - r * 11);
          for (const x of [72, 81, 140]) vrule(d, x, 567, 600);
          items.forEach((item, r) => d.text(item, 85, 591 - r * 11, 8));
        },
      },
    ]);
    const boxes = inOrder(fields);
    assert.equal(boxes.length, 3, `a check box a row, nothing else: ${show(boxes)}`);
    for (const [r, field] of boxes.entries()) {
      assert.equal(field.type, 'checkbox', show([field]));
      assert.equal(field.label, items[r]);
      const p = points(field);
      near(p.x1, 72, 'left: the cell', field, W, H, 1);
      near(p.x2, 81, 'right: the cell', field, W, H, 1);
      near(p.y1, 192 + r * 11, 'top: the cell', field, W, H, 1);
      near(p.y2, 203 + r * 11, 'bottom: the cell', field, W, H, 1);
    }
  });

  it('two narrow cells of one width (14 pt each) side by side in a ruled row are ONE field (a comb of two)', async () => {
    // The row: x 150..178 split at 164, displayed y 172..192.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Code', 72, 605);
            d.rule(150, 178, 600);
            d.rule(150, 178, 620);
            for (const x of [150, 164, 178]) vrule(d, x, 600, 620);
          },
        },
      ]),
    );
    assert.notEqual(field.type, 'checkbox');
    assert.match(field.label, /Code/);
    const p = points(field);
    near(p.x1, 150, 'left edge: the first cell', field);
    near(p.x2, 178, 'right edge: the second cell', field);
    near(p.y2, 192, 'bottom: the row', field);
  });

  describe('sub-columns: a column split into groups under one header', () => {
    // A ruled table x 72..450, columns at 250 and 376; header row displayed y 152..172, body rows
    // 172..192 and 192..212; 8-pt headers just over the header row's floor.
    const table = (dividersThroughHeader: boolean) => (d: Draw) => {
      for (const y of [640, 620, 600, 580]) d.rule(72, 450, y);
      for (const x of [72, 250, 376, 450]) vrule(d, x, 580, 640);
      // The column 250..376 in groups of 3, 2 and 4 digits of 14 pt: dividers at 292 and 320.
      for (const x of [292, 320]) vrule(d, x, 580, dividersThroughHeader ? 640 : 620);
      d.text('Name', 76, 624, 8);
      if (dividersThroughHeader) {
        d.text('First', 254, 624, 8);
        d.text('M.I.', 296, 624, 8);
        d.text('Last', 324, 624, 8);
      } else {
        d.text('Social security number', 254, 624, 8);
      }
      d.text('Amount', 380, 624, 8);
    };
    const rowsOf = (fields: DetectedField[]) =>
      fields.map((f) => {
        const p = points(f);
        return [Math.round(p.x1), Math.round(p.x2), Math.round(p.y2)];
      });

    it('dividers starting at the header\'s floor under "Social security number": each body row gives ONE field across the column, not three', async () => {
      const fields = inOrder(await fieldsOf([{ draw: table(false) }]));
      // Body rows' bottoms at 191.5 and 211.5: Name, Social security number, Amount in each.
      assert.deepEqual(
        rowsOf(fields),
        [
          [72, 250, 192],
          [250, 376, 192],
          [376, 450, 192],
          [72, 250, 212],
          [250, 376, 212],
          [376, 450, 212],
        ],
        show(fields),
      );
      assert.match(fields[1]!.label, /Social security number/);
    });

    it('control: dividers running up through the header, each sub-column with its own header word, keep a field each', async () => {
      const fields = inOrder(await fieldsOf([{ draw: table(true) }]));
      const row = (y: number) => [
        [72, 250, y],
        [250, 292, y],
        [292, 320, y],
        [320, 376, y],
        [376, 450, y],
      ];
      assert.deepEqual(rowsOf(fields), [...row(192), ...row(212)], show(fields));
      assert.match(fields[1]!.label, /First/);
    });
  });

  it('a box labelled at its top ("1 Gross distribution") with a "$" at its bottom left: one number field starting right of the "$"', async () => {
    // The box: x 72..222, displayed y 162..192; the label's baseline at 172; "$" (8 pt) at x 76, baseline 189.
    const sign = await advanceOf('$', 8);
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.box(72, 600, 150, 30);
            d.text('1 Gross distribution', 76, 620, 8);
            d.text('$', 76, 603, 8);
          },
        },
      ]),
    );
    assert.equal(field.type, 'number');
    assert.match(field.label, /Gross distribution/);
    const p = points(field);
    assert.ok(p.x1 >= 76 + sign, `right of the "$" (which ends at ${(76 + sign).toFixed(1)}): ${show([field])}`);
    near(p.x1, 76 + sign + 1, 'left edge: just after the "$"', field);
    near(p.x2, 222, 'right edge: the box', field);
    near(p.y2, 192, 'bottom: the box', field);
    assert.ok(p.y1 >= 172 && p.y2 - p.y1 >= 10, `below the label, room to write: ${show([field])}`);
  });

  it('a dashed fill-in line (5-pt dashes 3 pt apart) with "Address" on its left is one field, as a solid line', async () => {
    // 25 dashes from x 150 to 347 at PDF y 698 (displayed 94).
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Address', 72, 700);
            for (let i = 0; i < 25; i++) d.rule(150 + i * 8, 155 + i * 8, 698);
          },
        },
      ]),
    );
    assert.equal(field.type, 'short_text');
    assert.match(field.label, /Address/);
    assertAboveRule(field, { x1: 150, x2: 347, y: H - 698 });
  });

  it('a one-line ruled cell with "City", "State" and "ZIP" along it and room after each: three fields, one after each label', async () => {
    // The cell: x 72..472, displayed y 176..192; the 8-pt labels on its line at x 76, 230 and 350.
    const labels: Array<[string, number]> = [
      ['City', 76],
      ['State', 230],
      ['ZIP', 350],
    ];
    const ends = await Promise.all(labels.map(([label, x]) => advanceOf(label, 8).then((w) => x + w)));
    const fields = inOrder(
      await fieldsOf([
        {
          draw: (d) => {
            d.rule(72, 472, 600);
            d.rule(72, 472, 616);
            vrule(d, 72, 600, 616);
            vrule(d, 472, 600, 616);
            for (const [label, x] of labels) d.text(label, x, 603, 8);
          },
        },
      ]),
    );
    assert.deepEqual(fields.map((f) => f.label), ['City', 'State', 'ZIP'], show(fields));
    for (const [i, field] of fields.entries()) {
      assert.equal(field.type, 'short_text', show([field]));
      const p = points(field);
      near(p.x1, ends[i]! + 1, `left edge: after "${labels[i]![0]}"`, field);
      near(p.x2, i + 1 < labels.length ? labels[i + 1]![1] - 1 : 472, 'right edge: the next label or the cell', field);
      near(p.y2, 192, 'bottom: the cell', field);
      assert.ok(p.y1 >= 176 - 0.5, `inside the cell: ${show([field])}`);
    }
  });

  it('a line with nothing on its left or above and a caption just under it ("Social security number") is a field labelled by the caption', async () => {
    // The rule: x 150..350 at PDF y 700 (displayed 92); the 8-pt caption's baseline 8 pt under it.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.rule(150, 350, 700);
            d.text('Social security number', 150, 692, 8);
          },
        },
      ]),
    );
    assert.equal(field.label, 'Social security number');
    assert.equal(field.type, 'short_text');
    assertAboveRule(field, { x1: 150, x2: 350, y: H - 700 });
  });

  it('a line, or a box, under a row of captions ("Your last name", "Your first name", "M.I."): a field under each caption', async () => {
    // Captions (8 pt) at x 72, 250 and 450; page 1: a rule x 72..500 at displayed y 92; page 2: a
    // box x 72..500, displayed y 92..112.
    const captions = (d: Draw, y: number) => {
      d.text('Your last name', 72, y, 8);
      d.text('Your first name', 250, y, 8);
      d.text('M.I.', 450, y, 8);
    };
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.rule(72, 500, 700);
          captions(d, 716);
        },
      },
      {
        draw: (d) => {
          d.box(72, 680, 428, 20);
          captions(d, 704);
        },
      },
    ]);
    for (const [pageNumber, bottom] of [
      [1, 92],
      [2, 112],
    ] as const) {
      const on = inOrder(fields, pageNumber);
      assert.deepEqual(on.map((f) => f.label), ['Your last name', 'Your first name', 'M.I.'], show(on));
      // Each from where its caption starts to where the next one starts.
      const extents = [
        [72, 250],
        [250, 450],
        [450, 500],
      ];
      for (const [i, field] of on.entries()) {
        const p = points(field);
        near(p.x1, extents[i]![0]!, `page ${pageNumber}: left edge`, field);
        near(p.x2, extents[i]![1]!, `page ${pageNumber}: right edge`, field);
        near(p.y2, bottom, `page ${pageNumber}: bottom`, field);
        assert.ok(p.y2 - p.y1 >= 8 && p.y2 - p.y1 <= 22, `a line's height: ${show([field])}`);
      }
    }
  });

  it('a cell taller than 1.4 writing heights but no text area (94 × 23 pt, 8-pt text) is written on its bottom line', async () => {
    // 8-pt text: a writing height of 13.6 pt; the box x 150..244, displayed y 169..192.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Account', 72, 603, 8);
            d.box(150, 600, 94, 23);
          },
        },
      ]),
    );
    assert.match(field.label, /Account/);
    assert.equal(field.type, 'short_text');
    const p = points(field);
    near(p.x1, 150, 'left: the box', field);
    near(p.x2, 244, 'right: the box', field);
    near(p.y2, 192, 'bottom: the box', field);
    const h = p.y2 - p.y1;
    assert.ok(h >= 11 && h <= 16, `one writing line at the bottom (box top at 169), not ${h.toFixed(1)} pt: ${show([field])}`);
  });

  describe('a comb open at the top: ticks rising from a rule, no rule across their tops', () => {
    // "Account": a rule x 150..276 at displayed y 192 with ticks every 14 pt (9 cells).
    const comb = (tick: number) => (d: Draw) => {
      d.text('Account', 72, 603);
      d.rule(150, 276, 600, 0.5);
      for (let x = 150; x <= 276; x += 14) vrule(d, x, 600, 600 + tick, 0.5);
    };

    it('ticks 16 pt tall: ONE field over the row, up to the ticks\' top', async () => {
      const field = only(await fieldsOf([{ draw: comb(16) }]));
      assert.match(field.label, /Account/);
      const p = points(field);
      near(p.x1, 150, 'left: the first tick', field);
      near(p.x2, 276, 'right: the last tick', field);
      near(p.y1, 176, 'top: the ticks\' top', field);
      near(p.y2, 192, 'bottom: the rule', field);
    });

    it('ticks 5 pt tall: ONE field over the row, a line\'s height over the rule', async () => {
      const field = only(await fieldsOf([{ draw: comb(5) }]));
      const p = points(field);
      near(p.x1, 150, 'left: the first tick', field);
      near(p.x2, 276, 'right: the last tick', field);
      near(p.y2, 192, 'bottom: the rule', field);
      const h = p.y2 - p.y1;
      assert.ok(h >= 11 && h <= 22, `a line's height, not the ticks' 5 pt: ${show([field])}`);
    });
  });

  describe('a table filled in its header row: captions at the top of the header cells, a line\'s room under them', () => {
    // A ruled table x 72..450, columns at 200 and 330; header row displayed y 152..178 with 8-pt
    // captions at its top (baselines at displayed 160), one body row 178..192.
    const table = (captions: (d: Draw) => void) => (d: Draw) => {
      for (const y of [640, 614, 600]) d.rule(72, 450, y, 0.5);
      for (const x of [72, 200, 330, 450]) vrule(d, x, 600, 640, 0.5);
      captions(d);
    };
    const extents = [
      [72, 200],
      [200, 330],
      [330, 450],
    ];

    it('captions all on one line: a field under each caption, and a field in each cell of the row below', async () => {
      const captions = ['15 State wages', '16 State income tax', '17 Locality name'];
      const fields = inOrder(await fieldsOf([{ draw: table((d) => captions.forEach((c, i) => d.text(c, extents[i]![0]! + 3, 632, 8))) }]));
      assert.equal(fields.length, 6, `three in the header row, three in the body row: ${show(fields)}`);
      for (const [i, field] of fields.entries()) {
        const p = points(field);
        near(p.x1, extents[i % 3]![0]!, 'left: the column', field);
        near(p.x2, extents[i % 3]![1]!, 'right: the column', field);
        if (i < 3) {
          assert.equal(field.label, captions[i]);
          near(p.y2, 178, 'bottom: the header row\'s floor', field);
          assert.ok(p.y1 >= 160 && p.y1 <= 164, `top: under the caption, not over it: ${show([field])}`);
        } else {
          near(p.y2, 192, 'bottom: the body row\'s floor', field);
        }
      }
    });

    it('control: one caption running onto a second line (the room is the header\'s, not for writing): only the body row\'s three fields', async () => {
      const fields = inOrder(
        await fieldsOf([
          {
            draw: table((d) => {
              d.text('15 State wages', 75, 632, 8);
              d.text('16 State income tax', 203, 632, 8);
              d.text('withheld this year', 203, 622, 8);
              d.text('17 Locality name', 333, 632, 8);
            }),
          },
        ]),
      );
      assert.equal(fields.length, 3, show(fields));
      for (const field of fields) near(points(field).y2, 192, 'bottom: the body row\'s floor', field);
    });

    it('control: column letters ("A", "B", "C") as captions: only the body row\'s three fields', async () => {
      const fields = inOrder(await fieldsOf([{ draw: table((d) => ['A', 'B', 'C'].forEach((c, i) => d.text(c, extents[i]![0]! + 60, 632, 8))) }]));
      assert.equal(fields.length, 3, show(fields));
      for (const field of fields) near(points(field).y2, 192, 'bottom: the body row\'s floor', field);
    });
  });

  it('a numbered row ("11" alone on the left of a 48-pt cell, then an empty cell): a field after the number, and one in the next cell', async () => {
    // The row: x 72..400 split at 120, displayed y 200..214; "11" (8 pt) at x 74.
    const fields = inOrder(
      await fieldsOf([
        {
          draw: (d) => {
            d.rule(72, 400, 592, 0.5);
            d.rule(72, 400, 578, 0.5);
            for (const x of [72, 120, 400]) vrule(d, x, 578, 592, 0.5);
            d.text('11', 74, 581, 8);
          },
        },
      ]),
    );
    assert.equal(fields.length, 2, show(fields));
    const numberEnd = 74 + (await advanceOf('11', 8));
    const [first, second] = fields as [DetectedField, DetectedField];
    assert.equal(first.label, '11');
    const p = points(first);
    assert.ok(p.x1 >= numberEnd && p.x1 <= numberEnd + 4, `starts after the number (${numberEnd.toFixed(1)}): ${show([first])}`);
    near(p.x2, 120, 'right: the cell', first);
    near(p.y2, 214, 'bottom: the row', first);
    const q = points(second);
    near(q.x1, 120, 'left: the next cell', second);
    near(q.x2, 400, 'right: the next cell', second);
  });
});

describe('layout detection: printed things that are not fields', () => {
  const paragraph = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.';

  it('a frame around the whole page with paragraphs inside', async () => {
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.box(20, 20, 572, 752);
          d.text('Terms and conditions', 60, 730, 16);
          for (let i = 0; i < 12; i++) d.text(paragraph, 60, 700 - i * 14);
          for (let i = 0; i < 8; i++) d.text(paragraph, 60, 500 - i * 14);
        },
      },
    ]);
    assert.equal(fields.length, 0, `no field: ${show(fields)}`);
  });

  it('a rule across the page width under a heading', async () => {
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.text('Annual Report', 72, 720, 18);
          d.rule(36, 576, 712);
          for (let i = 0; i < 4; i++) d.text(paragraph, 72, 690 - i * 14);
        },
      },
    ]);
    assert.equal(fields.length, 0, `no field: ${show(fields)}`);
  });

  /** A 3 × 3 table of printed amounts: cells 100 × 20 pt from (72, 540) to (372, 600). */
  const table = (align: 'left' | 'right') => (d: Draw) => {
    for (let r = 0; r < 4; r++) d.rule(72, 372, 600 - r * 20);
    for (let c = 0; c < 4; c++) d.page.drawLine({ start: { x: 72 + c * 100, y: 540 }, end: { x: 72 + c * 100, y: 600 }, thickness: 1 });
    const w = d.font.widthOfTextAtSize('12.50', 11);
    for (let r = 0; r < 3; r++) {
      for (let c = 0; c < 3; c++) d.text('12.50', (align === 'left' ? 76 : 168 - w) + c * 100, 586 - r * 20);
    }
  };

  it('a table grid of printed values, right-aligned', async () => {
    const fields = await fieldsOf([{ draw: table('right') }]);
    assert.equal(fields.length, 0, `no field: ${show(fields)}`);
  });

  it(
    'a table grid of printed values, left-aligned',
    async () => {
      const fields = await fieldsOf([{ draw: table('left') }]);
      assert.equal(fields.length, 0, `no field: ${show(fields)}`);
    },
  );

  it('underlined words: a rule under a word in a sentence, and under a heading', async () => {
    const fields = await fieldsOf([
      {
        draw: (d) => {
          const before = 'Please read the ';
          d.text(`${before}terms and conditions before you sign.`, 72, 700);
          const x = 72 + d.font.widthOfTextAtSize(before, 11);
          d.rule(x, x + d.font.widthOfTextAtSize('terms', 11), 698.5);
          d.text('Summary', 72, 650, 14);
          d.rule(72, 72 + d.font.widthOfTextAtSize('Summary', 14), 647.5);
          d.text(paragraph, 72, 630);
        },
      },
    ]);
    assert.equal(fields.length, 0, `no field: ${show(fields)}`);
  });

  it('a shaded cell with rules around it (while the same cell unshaded is a field)', async () => {
    // A 200 × 20 cell from (72, 600), "For office use" above it; page 1 shaded grey, page 2 not.
    const cell = (shaded: boolean) => (d: Draw) => {
      if (shaded) d.page.drawRectangle({ x: 72, y: 600, width: 200, height: 20, color: rgb(0.8, 0.8, 0.8) });
      d.rule(72, 272, 600);
      d.rule(72, 272, 620);
      d.page.drawLine({ start: { x: 72, y: 600 }, end: { x: 72, y: 620 }, thickness: 1 });
      d.page.drawLine({ start: { x: 272, y: 600 }, end: { x: 272, y: 620 }, thickness: 1 });
      d.text('For office use', 72, 625);
    };
    const fields = await fieldsOf([{ draw: cell(true) }, { draw: cell(false) }]);
    assert.equal(fields.filter((f) => f.pageNumber === 1).length, 0, `no field on the shaded cell: ${show(fields)}`);
    const control = only(fields, 2);
    const p = points(control);
    near(p.x1, 72, 'control: left', control);
    near(p.x2, 272, 'control: right', control);
    near(p.y2, 192, 'control: bottom', control);
  });

  it('the top edge of a box, with a label well above it: no field above the edge, only the box', async () => {
    // "Name" (11 pt) with its baseline at displayed y 152; the box x 72..322, displayed y 172..192.
    const field = only(
      await fieldsOf([
        {
          draw: (d) => {
            d.text('Name', 72, 640);
            d.box(72, 600, 250, 20);
          },
        },
      ]),
    );
    const p = points(field);
    near(p.x1, 72, 'left: the box', field);
    near(p.x2, 322, 'right: the box', field);
    assert.ok(p.y1 >= 171, `inside the box, not above its top edge (172): ${show([field])}`);
    near(p.y2, 192, 'bottom: the box', field);
  });

  it('the thin strip between two stacked boxes with 4-pt borders (6 or 8 pt of white between them)', async () => {
    // Boxes 250 × 30 from x 72: the lower one displayed y 162..192, the upper one 10 or 12 pt above it.
    const fields = await fieldsOf(
      [10, 12].map((gap) => ({
        draw: (d: Draw) => {
          d.box(72, 630 + gap, 250, 30, 4);
          d.box(72, 600, 250, 30, 4);
        },
      })),
    );
    for (const [i, gap] of [10, 12].entries()) {
      const on = inOrder(fields, i + 1);
      assert.equal(on.length, 2, `a field in each box, none between them: ${show(on)}`);
      // Inside each box, above its 4-pt bottom border.
      const [upper, lower] = on.map((f) => points(f));
      near(upper!.y2, 162 - gap - 2, 'upper box: bottom', on[0]!);
      assert.ok(upper!.y1 >= 132 - gap, `inside the upper box: ${show(on)}`);
      near(lower!.y2, 190, 'lower box: bottom', on[1]!);
      assert.ok(lower!.y1 >= 162, `inside the lower box: ${show(on)}`);
    }
  });

  it('a mark without a letter or digit in a cell ("▲", "•", ","): not a word, the cell is still one field over its whole width', async () => {
    // A 200 × 20 cell from (72, 600), "For office use" above it, the mark at its left (x 76).
    // ▲ and • are written in Helvetica re-encoded to the glyph names uni25B2 and uni2022.
    const cell = (mark: (d: Draw) => void) => (d: Draw) => {
      d.rule(72, 272, 600);
      d.rule(72, 272, 620);
      vrule(d, 72, 600, 620);
      vrule(d, 272, 600, 620);
      d.text('For office use', 72, 625);
      mark(d);
    };
    const fields = await fieldsOf([
      { draw: cell((d) => drawUnicode(d, '\u25B2', 76, 604)) },
      { draw: cell((d) => drawUnicode(d, '\u2022', 76, 604)) },
      { draw: cell((d) => d.text(',', 76, 604)) },
    ]);
    for (const pageNumber of [1, 2, 3]) {
      const field = only(fields, pageNumber);
      assert.match(field.label, /For office use/);
      const p = points(field);
      near(p.x1, 72, `page ${pageNumber}: left, the cell (not after the mark)`, field);
      near(p.x2, 272, `page ${pageNumber}: right, the cell`, field);
      near(p.y2, 192, `page ${pageNumber}: bottom, the cell`, field);
    }
  });
});

describe('layout detection: pages with form widgets', () => {
  it('a page with an AcroForm text field gives only that field; the layout detector runs on the other pages', async () => {
    const fields = await fieldsOf([
      {
        draw: (d) => {
          d.text('Full name', 72, 605);
          d.doc.getForm().createTextField('full.name').addToPage(d.page, { x: 150, y: 600, width: 200, height: 20 });
          fillIn(d, 'City', 500, 110, 300);
        },
      },
      { draw: (d) => fillIn(d, 'City', 500, 110, 300) },
    ]);
    const first = fields.filter((f) => f.pageNumber === 1);
    assert.equal(first.length, 1, show(first));
    assert.equal(first[0]!.source, 'acroform');
    assert.equal(first[0]!.label, 'full.name');
    const second = only(fields, 2);
    assert.equal(second.label, 'City');
    assertAboveRule(second, { x1: 110, x2: 300, y: H - 498 });
  });

  it('a page of vector art (thousands of rules) is not read as a form: no field, and the labelled line beside it is not either', async () => {
    const fields = await fieldsOf([
      {
        draw: (d) => {
          fillIn(d, 'Name', 700, 150, 350);
          // A hatching of 4,500 short rules: a drawing, not a form.
          for (let i = 0; i < 4500; i++) d.rule(72 + (i % 90) * 5, 75 + (i % 90) * 5, 100 + Math.floor(i / 90) * 8, 0.3);
        },
      },
      { draw: (d) => fillIn(d, 'Name', 700, 150, 350) },
    ]);
    // The same labelled line on a page of its own is found: the art page alone is skipped.
    assert.deepEqual(fields.map((f) => f.pageNumber), [2], show(fields));
  });
});
