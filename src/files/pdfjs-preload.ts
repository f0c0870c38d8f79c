/**
 * Loads pdf.js's "worker" code into this process before it says it is ready. pdf.js in Node runs
 * it in the same thread, and would otherwise import it (a 2 MB module) when the first document is
 * opened — time that would count against that document's limit.
 */
export async function preloadPdfjsWorker(): Promise<void> {
  // A variable specifier: the module ships no type declarations, and only its presence matters.
  const specifier = 'pdfjs-dist/legacy/build/pdf.worker.mjs';
  (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = await import(specifier);
}
