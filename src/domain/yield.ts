/**
 * Lets the event loop run what is waiting (other requests, health checks) before going on: for
 * the few steps of CPU work a large form needs (parsing, hashing, serialising megabytes), so that
 * they run as several short turns instead of one long one. On SQLite a request's queries do not
 * yield by themselves (the driver is synchronous); only this does.
 */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
