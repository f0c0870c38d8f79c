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

type ToBase64 = (this: Uint8Array, options?: { alphabet?: string; omitPadding?: boolean }) => string;
/** The engine's own `Uint8Array.prototype.toBase64`, taken when this module runs: none on Node 20. */
const ENGINE_TO_BASE64 = (Uint8Array.prototype as { toBase64?: ToBase64 }).toBase64;

/**
 * `Uint8Array.prototype.toBase64` (TC39's ArrayBuffer base64 proposal) through Node's own base64
 * encoder: the same string as the proposal's, options and errors included. core-js's version, in
 * JavaScript, builds the string a character at a time (see `./pdfjs.ts` for where pdf.js uses it).
 */
const bufferToBase64: ToBase64 = function toBase64(this: Uint8Array, options?: { alphabet?: string; omitPadding?: boolean }): string {
  if (!(this instanceof Uint8Array)) throw new TypeError('Argument is not an Uint8Array');
  if (options !== undefined && (options === null || typeof options !== 'object')) throw new TypeError('Options must be an object');
  const alphabet = options?.alphabet === undefined ? 'base64' : options.alphabet;
  if (alphabet !== 'base64' && alphabet !== 'base64url') throw new TypeError('Incorrect `alphabet` option');
  if ((this.buffer as { detached?: boolean }).detached) throw new TypeError('The underlying ArrayBuffer is detached');
  const text = Buffer.from(this.buffer, this.byteOffset, this.byteLength).toString(alphabet);
  // Node's base64url has no padding and its base64 always has: each option says which it wants.
  const omitPadding = !!options?.omitPadding;
  if (alphabet === 'base64') return omitPadding ? text.replace(/=+$/, '') : text;
  return omitPadding ? text : text + '='.repeat((4 - (text.length % 4)) % 4);
};

/**
 * Puts the engine's `toBase64` back, or where the engine has none, installs one made on Node's
 * encoder (`replaced`: the function that was in its place, for the tests and benchmarks).
 */
export function restoreFastBase64(): { replaced: ToBase64 | null } {
  const proto = Uint8Array.prototype as { toBase64?: ToBase64 };
  const wanted = ENGINE_TO_BASE64 ?? bufferToBase64;
  const current = proto.toBase64;
  if (current === wanted || current === undefined) return { replaced: null };
  Object.defineProperty(Uint8Array.prototype, 'toBase64', { value: wanted, writable: true, enumerable: false, configurable: true });
  return { replaced: current };
}
