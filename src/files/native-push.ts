/**
 * The engine's own `Array.prototype.push`, taken when this module runs: before pdf.js's modules
 * when `./pdfjs.ts` is how the process loads pdf.js (it imports this module first, and ES modules
 * run their imports in order). See `./pdfjs.ts` for why it is put back.
 */
const NATIVE_PUSH = Array.prototype.push;
/** core-js (which pdf.js's legacy build bundles) had already run: the push above may be its own. */
const TAKEN_AFTER_CORE_JS = '__core-js_shared__' in globalThis;

/**
 * Puts the engine's push back. `restored` is false (and nothing changed) when it could not be taken
 * before core-js ran; `replaced` is the push that was in its place, if another.
 */
export function restoreNativePush(): { restored: boolean; replaced: typeof NATIVE_PUSH | null } {
  if (TAKEN_AFTER_CORE_JS) return { restored: false, replaced: null };
  const current = Array.prototype.push;
  if (current === NATIVE_PUSH) return { restored: true, replaced: null };
  // The same attributes as the engine's: writable, configurable, not enumerable.
  Object.defineProperty(Array.prototype, 'push', { value: NATIVE_PUSH, writable: true, enumerable: false, configurable: true });
  return { restored: true, replaced: current };
}
