import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cyclesOf, importGraph, violationsOf, type ImportGraph } from './helpers/architecture.js';

const graphOf = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges).map(([file, imports]) => [file, new Set(imports)]));

describe('architecture (docs/architecture.md)', () => {
  it('src/ keeps the import rules: layers, store helpers only, no route importing a route, no cycle', async () => {
    const graph = await importGraph('src');
    assert.ok(graph.size > 50, `the graph was read (${graph.size} files)`);
    assert.ok(graph.get('src/app.ts')?.has('src/http/routes/forms.ts'), 'edges were read');
    assert.ok(graph.get('src/http/routes/documents.ts')?.has('src/store/documents.ts'), 'type-only and value imports alike');
    assert.deepEqual(violationsOf(graph), []);
  });

  it('finds a store file importing services/, http/ or jobs/, or another store file', () => {
    const found = violationsOf(graphOf({
      'src/store/forms.ts': ['src/services/publish.ts', 'src/store/db.ts'],
      'src/store/documents.ts': ['src/http/errors.ts', 'src/jobs/queue.ts', 'src/store/forms.ts'],
      'src/services/publish.ts': [],
      'src/store/db.ts': [],
      'src/http/errors.ts': [],
      'src/jobs/queue.ts': [],
    }));
    assert.deepEqual(found, [
      'src/store/forms.ts imports src/services/publish.ts: store/ may not import services/',
      'src/store/documents.ts imports src/http/errors.ts: store/ may not import http/',
      'src/store/documents.ts imports src/jobs/queue.ts: store/ may not import jobs/',
      'src/store/documents.ts imports src/store/forms.ts: a store/ file imports only the store\'s shared helpers (db.ts, schema.ts, sqlite-driver.ts, tx.ts, ordering.ts, prepared.ts, page.ts, live.ts)',
    ]);
  });

  it('finds a route module importing another', () => {
    const found = violationsOf(graphOf({ 'src/http/routes/fields.ts': ['src/http/routes/documents.ts', 'src/http/params.ts'], 'src/http/routes/documents.ts': [], 'src/http/params.ts': [] }));
    assert.deepEqual(found, ['src/http/routes/fields.ts imports src/http/routes/documents.ts: a route module imports no other']);
  });

  it('finds every import cycle, once each, also through layers that may import each other', () => {
    const graph = graphOf({
      'src/services/a.ts': ['src/services/b.ts'],
      'src/services/b.ts': ['src/services/c.ts'],
      'src/services/c.ts': ['src/services/a.ts', 'src/services/d.ts'],
      'src/services/d.ts': ['src/services/d2.ts'],
      'src/services/d2.ts': ['src/services/d.ts'],
      'src/domain/x.ts': [],
    });
    assert.deepEqual(cyclesOf(graph), [
      ['src/services/a.ts', 'src/services/b.ts', 'src/services/c.ts'],
      ['src/services/d.ts', 'src/services/d2.ts'],
    ]);
    assert.deepEqual(violationsOf(graph), [
      'import cycle: src/services/a.ts > src/services/b.ts > src/services/c.ts > src/services/a.ts',
      'import cycle: src/services/d.ts > src/services/d2.ts > src/services/d.ts',
    ]);
    // A cycle across layers is a layering error as well.
    assert.ok(violationsOf(graphOf({ 'src/jobs/worker.ts': ['src/services/x.ts'], 'src/services/x.ts': ['src/jobs/worker.ts'] })).some((v) => v.startsWith('import cycle: src/jobs/worker.ts > src/services/x.ts')));
  });

  it('finds a domain file importing anything outside domain/', () => {
    assert.deepEqual(violationsOf(graphOf({ 'src/domain/fields.ts': ['src/detect/geometry.ts'], 'src/detect/geometry.ts': [] })), [
      'src/domain/fields.ts imports src/detect/geometry.ts: domain/ may not import detect/',
    ]);
  });
});
