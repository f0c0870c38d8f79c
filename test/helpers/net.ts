import net from 'node:net';

/** A TCP port on loopback that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Polls `check` until it answers true (errors count as "not yet"), for at most `ms`. */
export async function waitFor(check: () => Promise<boolean>, ms = 20_000, everyMs = 50): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A TCP relay on loopback to a database, which a test can cut (`cut`) or stop listening (`server.close`). */
export interface DatabaseRelay {
  server: net.Server;
  /** `databaseUrl` with the relay's host and port. */
  url: string;
  /** Destroys every connection through the relay (both sides); the relay still accepts new ones. */
  cut(): void;
  close(): Promise<void>;
}

export async function startDatabaseRelay(databaseUrl: string): Promise<DatabaseRelay> {
  const target = new URL(databaseUrl);
  const links = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const end of [client, upstream]) {
      links.add(end);
      end.on('error', () => {});
      end.on('close', () => links.delete(end));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(target);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as net.AddressInfo).port);
  const cut = () => {
    for (const link of links) link.destroy();
  };
  return {
    server,
    url: relayed.toString(),
    cut,
    async close() {
      cut();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}
