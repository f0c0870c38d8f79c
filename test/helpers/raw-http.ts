import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from connecting to the server closing the connection (or the answer being complete). */
  ms: number;
}

/** Parses the first HTTP/1.1 response in `raw` (Content-Length bodies only). */
export function parseResponse(raw: string): Omit<RawResponse, 'ms'> {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response in ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? raw.length - end - 4);
  return { status, headers, body: raw.slice(end + 4, end + 4 + length) };
}

/**
 * Opens a socket, writes `chunks` (a string, or a list written `gapMs` apart, stopping early once
 * the server answers or closes, unless `untilClosed`) and resolves with the answer when the server
 * closes the connection.
 */
export function rawRequest(
  port: number,
  chunks: string | Buffer | Array<string | Buffer>,
  options: { gapMs?: number; timeoutMs?: number; untilClosed?: boolean } = {},
): Promise<RawResponse> {
  const list = Array.isArray(chunks) ? chunks : [chunks];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${options.timeoutMs ?? 10_000} ms; received ${JSON.stringify(received.slice(0, 300))}`));
    }, options.timeoutMs ?? 10_000);
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      try {
        resolve({ ...parseResponse(received), ms: performance.now() - started });
      } catch (error) {
        reject(error);
      }
    });
    socket.on('connect', async () => {
      for (const chunk of list) {
        if (closed || (received && !options.untilClosed)) return;
        socket.write(chunk);
        if (options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
      }
    });
  });
}

/** The envelope's shape: success false, error, hint and code, nothing else. */
export function isEnvelope(body: string): boolean {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  return (
    parsed.success === false &&
    typeof parsed.error === 'string' &&
    typeof parsed.hint === 'string' &&
    typeof parsed.code === 'string' &&
    Object.keys(parsed).sort().join() === 'code,error,hint,success'
  );
}
