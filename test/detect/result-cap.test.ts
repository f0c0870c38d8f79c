import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_FIELDS_PER_DOCUMENT } from '../../src/domain/fields.js';
import { keepBest } from '../../src/detect/pipeline.js';
import type { DetectedField, Source } from '../../src/detect/types.js';
import { detect, drawPdf, LABELS_AND_RULES } from '../helpers/layout-pdf.js';

const field = (pageNumber: number, source: Source, confidence: number, label: string): DetectedField => ({
  type: 'short_text',
  label,
  pageNumber,
  rect: { x: 0.1, y: 0.1, width: 0.2, height: 0.02 },
  confidence,
  source,
  assigneeRole: null,
  isRequired: false,
  isReadOnly: false,
  options: {},
});

describe('a detection result holds at most the fields a document can hold', () => {
  it('keepBest keeps the exact sources, then the most confident, in their original order', () => {
    const fields = [
      field(1, 'layout', 0.2, 'a'),
      field(1, 'acroform', 0.1, 'b'),
      field(2, 'layout', 0.9, 'c'),
      field(2, 'text_tag', 0.05, 'd'),
      field(3, 'layout', 0.5, 'e'),
      field(3, 'layout', 0.9, 'f'),
    ];
    assert.deepEqual(keepBest(fields, 4).map((f) => f.label), ['b', 'c', 'd', 'f']);
    assert.deepEqual(keepBest(fields, 2).map((f) => f.label), ['b', 'd']);
    assert.deepEqual(keepBest(fields, 10).map((f) => f.label), ['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('a PDF whose pages print more label-and-rule pairs than a document holds gives a bounded result that says so', async () => {
    // 120 labels with a rule right of each, on each of 90 pages: far more layout fields than 5,000.
    const result = await detect(await drawPdf(Array.from({ length: 90 }, () => LABELS_AND_RULES)));
    assert.equal(result.stats.pages, 90);
    assert.ok((result.stats.found.layout ?? 0) > 2 * MAX_FIELDS_PER_DOCUMENT, `found ${result.stats.found.layout}`);
    assert.equal(result.fields.length, MAX_FIELDS_PER_DOCUMENT);
    assert.ok(result.stats.warnings.some((w) => w.includes(String(MAX_FIELDS_PER_DOCUMENT))), result.stats.warnings.join('; '));
    // Page by page, as a result always reads.
    for (let i = 1; i < result.fields.length; i++) assert.ok(result.fields[i]!.pageNumber >= result.fields[i - 1]!.pageNumber);
  });
});
