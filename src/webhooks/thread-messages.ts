/** What `dispatcher-thread.ts` (the API's side) and `thread.ts` (the delivery thread) say to each other. */
import type { StoreOptions } from '../store/db.js';
import type { OutboundPolicy } from './safety.js';

/** Given to the thread when it starts (structured-cloned: plain data only). */
export interface ThreadData {
  /** Its own connection: the same database as the API's. */
  store: StoreOptions;
  dispatcher: { policy: OutboundPolicy; timeoutMs?: number; concurrency?: number; retryScale?: number; pollMs?: number };
}

export type ToThread = { type: 'wake' } | { type: 'stop'; graceMs: number };

export interface PlainError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

export type ToParent =
  | { type: 'started'; owner: string }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; obj: object; err?: PlainError; msg: string }
  | { type: 'stopped'; error?: PlainError };
