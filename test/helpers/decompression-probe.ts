/**
 * Loaded (`--import`) before src/detect/thread.ts in a detection process forked by a test: when the
 * process says it is ready (its modules loaded and run), it first sends which `DecompressionStream`
 * it has (`{ type: 'probe', decompressionStream: <class name> }`).
 */
const send = process.send!.bind(process);
process.send = ((message: { type?: string }, ...rest: unknown[]) => {
  if (message?.type === 'ready') send({ type: 'probe', decompressionStream: globalThis.DecompressionStream.name });
  return (send as (...args: unknown[]) => boolean)(message, ...rest);
}) as typeof process.send;
