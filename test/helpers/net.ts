import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * Ports are handed out outside the kernel's ephemeral range (`ip_local_port_range`, usually
 * 32768–60999: then the 12,000 ports below it), so that a port handed out here is never also given
 * to a `listen(0)` or to an outgoing connection of another test process. Each is reserved across
 * the processes of a run by a file created exclusively, holding the owner's pid (a reservation
 * whose process is gone is taken over). Without this, two test files running side by side could
 * get the same port: one process's polls then reached the other's server, and the server started
 * on that port could not bind.
 */
const [LOW, HIGH] = outsideEphemeral();
const RESERVATIONS = path.join(os.tmpdir(), 'formsign-test-ports');
const mine = new Set<string>();
process.once('exit', () => {
  for (const file of mine) fs.rmSync(file, { force: true });
});

/** 4,000 ports or more below the kernel's ephemeral range, else above it; 20000–32000 when it cannot be read. */
function outsideEphemeral(): [number, number] {
  try {
    const [first, last] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (first! - 1024 >= 4000) return [Math.max(1024, first! - 12_000), first!];
    if (65_535 - last! >= 4000) return [last! + 1, 65_536];
  } catch {
    // not Linux
  }
  return [20_000, 32_000];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the reservation of `port` for this process; false when a live process holds it. */
function reserve(port: number): boolean {
  const file = path.join(RESERVATIONS, String(port));
  for (let tries = 0; tries < 2; tries++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      mine.add(file);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(file, 'utf8'));
      if (owner === process.pid || (Number.isInteger(owner) && owner > 0 && alive(owner))) return false;
      fs.rmSync(file, { force: true });
    }
  }
  return false;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port on loopback that nothing listens on right now and that no other test process of this machine holds. */
export async function freePort(): Promise<number> {
  fs.mkdirSync(RESERVATIONS, { recursive: true });
  for (let tries = 0; tries < 1000; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (!reserve(port)) continue;
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${LOW} and ${HIGH}`);
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
