import fs from 'node:fs';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';

/** Who imports whom: each file of `src/` (paths like `src/store/forms.ts`) to the files of `src/` it imports. */
export type ImportGraph = Map<string, Set<string>>;

function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/**
 * `import type …` and `export type { … } from …` kept as imports: esbuild drops them (they vanish
 * at run time), yet a layer must not name another's types either.
 */
const keepTypeImports: Plugin = {
  name: 'keep-type-imports',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = fs.readFileSync(args.path, 'utf8')
        .replace(/^(\s*)import type (?=[{*\w])/gm, '$1import ')
        .replace(/^(\s*)export type (\{[^}]*\}\s*from\b)/gm, '$1export $2');
      return { contents: source, loader: 'ts' };
    });
  },
};

/**
 * The import graph of `root` (default `src`), read by esbuild's own parser and resolver (every
 * static and dynamic import, type imports included; packages left out).
 */
export async function importGraph(root = 'src'): Promise<ImportGraph> {
  const result = await build({
    entryPoints: sourcesUnder(root).map((file) => `./${file}`),
    absWorkingDir: process.cwd(),
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outdir: path.join(root, '.architecture-out'),
    logLevel: 'silent',
    // Imports of names only used as types are kept, as written.
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    plugins: [keepTypeImports],
  });
  const graph: ImportGraph = new Map();
  for (const [file, input] of Object.entries(result.metafile.inputs)) {
    if (!file.startsWith(`${root}/`) || !file.endsWith('.ts')) continue;
    graph.set(file, new Set(input.imports.map((i) => i.path).filter((p) => p.startsWith(`${root}/`) && p.endsWith('.ts'))));
  }
  return graph;
}

/** The layer of a file: its folder under `src/` (`store`, `services`, `http`, …), or `root` for `src/*.ts`. */
export function layerOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1]! : 'root';
}

/** The files of `store/` that any file of `store/` may import: connection, schema, and shared helpers. */
export const STORE_HELPERS = new Set(['db.ts', 'schema.ts', 'sqlite-driver.ts', 'tx.ts', 'ordering.ts', 'prepared.ts', 'page.ts', 'live.ts']);

/** Which layers each layer may import (its own always). Must match docs/architecture.md. */
export const MAY_IMPORT: Record<string, readonly string[]> = {
  domain: [],
  limits: ['domain'],
  blobs: ['domain'],
  files: ['domain'],
  detect: ['domain', 'files'],
  store: ['domain', 'blobs'],
  webhooks: ['domain', 'store'],
  services: ['domain', 'store', 'blobs', 'files', 'detect', 'jobs', 'webhooks'],
  jobs: ['domain', 'store', 'services', 'blobs', 'detect'],
  http: ['domain', 'store', 'services', 'blobs', 'files', 'detect', 'limits', 'jobs', 'webhooks'],
  root: ['domain', 'store', 'services', 'blobs', 'files', 'detect', 'jobs', 'http', 'limits', 'webhooks'],
};

/** Every import cycle of `graph`, each once (as the files along it, starting from its least). */
export function cyclesOf(graph: ImportGraph): string[][] {
  const cycles = new Map<string, string[]>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') {
        const cycle = stack.slice(stack.indexOf(next));
        const least = cycle.indexOf([...cycle].sort()[0]!);
        const turned = [...cycle.slice(least), ...cycle.slice(0, least)];
        cycles.set(turned.join(' > '), turned);
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return [...cycles.values()];
}

/** What breaks the rules of docs/architecture.md in `graph`, one line each; none when all is well. */
export function violationsOf(graph: ImportGraph): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    const from = layerOf(file);
    for (const target of imports) {
      const to = layerOf(target);
      if (from !== to && !(MAY_IMPORT[from] ?? []).includes(to)) found.push(`${file} imports ${target}: ${from}/ may not import ${to}/`);
      if (from === 'store' && to === 'store' && !STORE_HELPERS.has(path.basename(target))) {
        found.push(`${file} imports ${target}: a store/ file imports only the store's shared helpers (${[...STORE_HELPERS].join(', ')})`);
      }
      if (file.startsWith('src/http/routes/') && target.startsWith('src/http/routes/')) found.push(`${file} imports ${target}: a route module imports no other`);
    }
  }
  for (const cycle of cyclesOf(graph)) found.push(`import cycle: ${[...cycle, cycle[0]].join(' > ')}`);
  return found;
}
