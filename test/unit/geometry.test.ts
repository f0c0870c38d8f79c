import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boxOf, pageRect } from '../../src/detect/geometry.js';

describe('page boxes in fractions of the page', () => {
  it('a box reaching the page edge stays within it after rounding (a field must keep x + width ≤ 1)', () => {
    // 5e-7 rounds up to 0.000001 and 1 - 5e-7 up to 1: rounded separately they overshoot by 1e-6.
    const rect = pageRect(5e-7, 5e-7, 1, 1)!;
    assert.ok(rect.x + rect.width <= 1 + 1e-9, JSON.stringify(rect));
    assert.ok(rect.y + rect.height <= 1 + 1e-9, JSON.stringify(rect));
    const view = { width: 2e6, height: 2e6, toView: (x: number, y: number): [number, number] => [x, y] };
    const box = boxOf(view, [[1, 1], [2e6, 2e6]])!;
    assert.ok(box.x + box.width <= 1 + 1e-9 && box.y + box.height <= 1 + 1e-9, JSON.stringify(box));
  });

  it('clamps to the page, and gives null when nothing of the box is on it', () => {
    assert.deepEqual(pageRect(-0.5, 0.25, 0.5, 2), { x: 0, y: 0.25, width: 0.5, height: 0.75 });
    assert.equal(pageRect(1.2, 0, 1.5, 1), null);
    assert.equal(pageRect(0.3, 0.3, 0.3, 0.5), null);
  });
});
