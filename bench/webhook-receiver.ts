/**
 * A webhook receiver for bench/webhooks.ts, in a process of its own: answers every POST with
 * 200 after `DELAY_MS` (0: at once), counting what it received; `GET /count` answers the count.
 */
import http from 'node:http';

const delay = Number(process.env.DELAY_MS ?? 0);
let received = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.end(String(received));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    const answer = () => res.end('ok');
    if (delay > 0) setTimeout(answer, delay);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
