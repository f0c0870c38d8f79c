/**
 * The synthetic training pages (scripts/detect/synthetic.ts): the same pages on every run, and
 * truth boxes that sit on what the page prints — a check box on a drawn square, a text or
 * signature field on a rule or inside a drawn box — so that the model is taught what it sees.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { syntheticForms, SYNTHETIC_REPO } from '../../scripts/detect/synthetic.js';

describe('synthetic training pages', () => {
  it('are the same on every run, in the shape of the data set, and every truth box is printed on the page', async () => {
    const forms = await syntheticForms(12);
    assert.deepEqual(JSON.parse(JSON.stringify(await syntheticForms(12))), JSON.parse(JSON.stringify(forms)));
    const counts = { text: 0, checkbox: 0, signature: 0, white: 0 };
    for (const form of forms) {
      assert.equal(form.set, 'synth');
      assert.equal(form.repo, SYNTHETIC_REPO);
      for (const page of form.pages) {
        const g = page.graphics;
        for (const t of page.truth) {
          counts[t.cls as 'text' | 'checkbox' | 'signature']++;
          const [x1, y1, x2, y2] = [t.rect.x * g.width, t.rect.y * g.height, (t.rect.x + t.rect.width) * g.width, (t.rect.y + t.rect.height) * g.height];
          assert.ok(x1 >= 0 && y1 >= 0 && x2 <= g.width && y2 <= g.height && x2 > x1 && y2 > y1, `${form.name}: a box off the page`);
          const near = (a: number, b: number, tol = 1.5) => Math.abs(a - b) <= tol;
          if (t.cls === 'checkbox') {
            // A drawn square of the same place and size.
            const square = g.shapes.some((s) => near(s.x, x1) && near(s.y, y1) && near(s.x + s.w, x2) && near(s.y + s.h, y2));
            assert.ok(square, `${form.name}: a check box on no drawn square`);
          } else {
            // Its bottom on a horizontal rule (a fill-in line, or a box's bottom edge) spanning it,
            // or the field a white box on a shaded band, read as a white filled shape.
            const rule = g.horizontal.some((r) => near(r.at, y2) && r.a <= x1 + 1.5 && r.b >= x2 - 1.5);
            const white = g.shapes.some((s) => s.filled && !s.stroked && s.fillLevel > 0.95 && near(s.x, x1) && near(s.y, y1) && near(s.x + s.w, x2) && near(s.y + s.h, y2));
            assert.ok(rule || white, `${form.name}: a ${t.cls} field with no rule under it and no white box`);
            if (white) counts.white++;
          }
        }
      }
    }
    // Every kind of field is there.
    assert.ok(counts.text > 20 && counts.checkbox > 5 && counts.signature > 0 && counts.white > 5, JSON.stringify(counts));
  });
});
