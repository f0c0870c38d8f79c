import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  at: number;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** What the receiver does with one request: answer a status (after a delay), or hang, or drop the connection. */
export type Behaviour = { status: number; delayMs?: number; body?: string; headers?: Record<string, string> } | { hang: true } | { drop: true };

/**
 * A real HTTP receiver on 127.0.0.1 for webhook tests: records every request, answers by the
 * behaviours queued with `next` (in order), then by `fallback` (default 200).
 */
export class Receiver {
  readonly received: Received[] = [];
  private readonly queued: Behaviour[] = [];
  fallback: Behaviour = { status: 200 };
  private server: http.Server;
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  port = 0;

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ at: Date.now(), path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        for (const w of [...this.waiters]) {
          if (this.received.length >= w.count) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve();
          }
        }
        const behaviour = this.queued.shift() ?? this.fallback;
        if ('hang' in behaviour) return;
        if ('drop' in behaviour) return void req.socket.destroy();
        const answer = () => {
          res.writeHead(behaviour.status, { 'content-type': 'text/plain', ...behaviour.headers });
          res.end(behaviour.body ?? 'ok');
        };
        if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
        else answer();
      });
    });
    this.server.keepAliveTimeout = 1000;
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  next(...behaviours: Behaviour[]): this {
    this.queued.push(...behaviours);
    return this;
  }

  /** Resolves when `count` requests in all have arrived. */
  async waitFor(count: number, ms = 20_000): Promise<void> {
    if (this.received.length >= count) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver: ${this.received.length} of ${count} requests after ${ms} ms`)), ms);
      this.waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
