/**
 * The webhook dispatcher in a worker thread of its own (`formsign serve`'s embedded deliveries;
 * `dispatcher-thread.ts` starts and stops it). It opens its own database connection (its own
 * SQLite connection in WAL mode, or its own small PostgreSQL pool) so that claims, signatures,
 * sockets and the recording of outcomes never run on the API's event loop.
 *
 * Messages from the parent: `wake` (something was queued), `stop` (with the grace for attempts in
 * flight). To the parent: `started` (with the dispatcher's lease owner), `log` (the parent writes
 * the line with its logger), `stopped`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createStore } from '../store/db.js';
import { WebhookDispatcher, type DispatcherLog } from './dispatcher.js';
import type { PlainError, ThreadData, ToParent, ToThread } from './thread-messages.js';

const port = parentPort;
if (!port) throw new Error('src/webhooks/thread.ts runs as a worker thread (see dispatcher-thread.ts)');
const data = workerData as ThreadData;

const send = (message: ToParent) => port.postMessage(message);

/** An error as plain data (a structured clone keeps neither its code nor its cause). */
function plainError(error: unknown): PlainError {
  const err = error as { name?: string; message?: string; stack?: string; code?: unknown };
  return { name: err?.name ?? 'Error', message: err?.message ?? String(error), stack: err?.stack, ...(typeof err?.code === 'string' ? { code: err.code } : {}) };
}

function forward(level: 'info' | 'warn' | 'error') {
  return (obj: object, msg: string) => {
    const { err, ...rest } = obj as { err?: unknown };
    send({ type: 'log', level, obj: rest, err: err === undefined ? undefined : plainError(err), msg });
  };
}
const log: DispatcherLog = { info: forward('info'), warn: forward('warn'), error: forward('error') };

const store = createStore(data.store);
const dispatcher = new WebhookDispatcher({ store, log, ...data.dispatcher });
dispatcher.start();
send({ type: 'started', owner: dispatcher.owner });

let stopping = false;
port.on('message', (message: ToThread) => {
  if (message.type === 'wake') {
    dispatcher.wake();
    return;
  }
  if (message.type === 'stop' && !stopping) {
    stopping = true;
    void (async () => {
      let error: PlainError | undefined;
      try {
        await dispatcher.stop(message.graceMs);
      } catch (e) {
        error = plainError(e);
      }
      await store.close().catch((e: unknown) => (error ??= plainError(e)));
      send({ type: 'stopped', error });
      // Ends this thread only (not the process), whatever handle is still open.
      process.exit(error ? 1 : 0);
    })();
  }
});
