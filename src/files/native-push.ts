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

/** `Uint8Array.prototype.toBase64`'s shape (TC39's ArrayBuffer base64 proposal). */
export type ToBase64 = (this: Uint8Array, options?: { alphabet?: string; omitPadding?: boolean }) => string;
/** The engine's own `Uint8Array.prototype.toBase64`, taken when this module runs: none on Node 20. */
const ENGINE_TO_BASE64 = (Uint8Array.prototype as { toBase64?: ToBase64 }).toBase64;

/**
 * `Uint8Array.prototype.toBase64` through Node's own base64 encoder: the same string as the
 * proposal's (and core-js's) for the same view and options, and a TypeError where they throw one
 * (not a Uint8Array, options neither an object nor undefined, another alphabet, a detached
 * buffer). core-js's version, in JavaScript, builds the string a character at a time (see
 * `./pdfjs.ts` for where pdf.js uses it). Like the proposal's, it declares no parameter (length 0).
 */
const bufferToBase64 = function toBase64(this: Uint8Array, ...args: unknown[]): string {
  // A typed array of any realm, by its internal slot and its tag.
  if (!ArrayBuffer.isView(this) || Object.prototype.toString.call(this) !== '[object Uint8Array]') throw new TypeError('Argument is not an Uint8Array');
  const options = args[0] as { alphabet?: unknown; omitPadding?: unknown } | undefined;
  if (options !== undefined && (options === null || (typeof options !== 'object' && typeof options !== 'function'))) throw new TypeError('Options must be an object');
  const alphabet = options?.alphabet === undefined ? 'base64' : options.alphabet;
  if (alphabet !== 'base64' && alphabet !== 'base64url') throw new TypeError('Incorrect `alphabet` option');
  // A view of a detached buffer has no bytes; only constructing a view on that buffer tells it
  // from an empty one (Node 20 has no `ArrayBuffer.prototype.detached`).
  if (this.byteLength === 0) new Uint8Array(this.buffer, 0, 0);
  const text = Buffer.from(this.buffer, this.byteOffset, this.byteLength).toString(alphabet);
  // Node's base64url has no padding and its base64 always has: each option says which it wants.
  const omitPadding = !!options?.omitPadding;
  if (alphabet === 'base64') return omitPadding ? text.replace(/=+$/, '') : text;
  return omitPadding ? text : text + '='.repeat((4 - (text.length % 4)) % 4);
} as ToBase64;

/**
 * Puts the engine's `toBase64` back, or where the engine has none, installs one made on Node's
 * encoder (`replaced`: the function that was in its place, for the tests and benchmarks). Leaves
 * it as it is when core-js ran before this module (the one taken may be core-js's own: pdfjs.ts
 * then warns, as for the push). An engine's own is trusted as it is, as it is for the push.
 */
export function restoreFastBase64(): { replaced: ToBase64 | null } {
  if (TAKEN_AFTER_CORE_JS) return { replaced: null };
  const proto = Uint8Array.prototype as { toBase64?: ToBase64 };
  const wanted = ENGINE_TO_BASE64 ?? bufferToBase64;
  const current = proto.toBase64;
  if (current === wanted || current === undefined) return { replaced: null };
  Object.defineProperty(Uint8Array.prototype, 'toBase64', { value: wanted, writable: true, enumerable: false, configurable: true });
  return { replaced: current };
}
