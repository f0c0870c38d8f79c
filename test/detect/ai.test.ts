import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { refineWithAi, type AiConfig, type AiPageInput } from '../../src/detect/ai.js';
import type { DetectedField } from '../../src/detect/types.js';
import { freePort } from '../helpers/net.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

type Reply = (res: http.ServerResponse, n: number, seen: Seen) => void;

/** A fake chat-completions endpoint on a free loopback port, answering the nth request with `reply`. */
async function fakeEndpoint(reply: Reply) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // kept as text
      }
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      reply(res, seen.length, entry);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  servers.push(close);
  return { seen, baseUrl: `http://127.0.0.1:${port}/v1`, close };
}
const servers: Array<() => Promise<void>> = [];
after(async () => {
  await Promise.all(servers.map((close) => close()));
});

/** A chat-completions answer whose message content is `content` (a string as is, else as JSON). */
function answer(res: http.ServerResponse, content: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: typeof content === 'string' ? content : JSON.stringify(content) }, finish_reason: 'stop' }],
    }),
  );
}

function status(res: http.ServerResponse, code: number): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end('{"error":{"message":"nope"}}');
}

const KEY = 'sk-test-secret-key-123';
function config(baseUrl: string, overrides: Partial<AiConfig> = {}): AiConfig {
  return { baseUrl, apiKey: KEY, model: 'test-model-7b', timeoutMs: 5000, maxRetries: 2, ...overrides };
}

function candidate(overrides: Partial<DetectedField> = {}): DetectedField {
  return {
    type: 'short_text',
    label: 'Text',
    pageNumber: 1,
    rect: { x: 0.1, y: 0.2, width: 0.3, height: 0.04 },
    confidence: 0.6,
    source: 'layout',
    assigneeRole: null,
    isRequired: false,
    isReadOnly: false,
    options: {},
    ...overrides,
  };
}

/** Page 1: three candidates; page 2: text only; page 3: one candidate. */
function pages(): AiPageInput[] {
  return [
    {
      pageNumber: 1,
      text: [
        { str: 'Full name:', rect: { x: 0.05, y: 0.2, width: 0.0512345, height: 0.02 } },
        { str: '   ', rect: { x: 0, y: 0, width: 0.1, height: 0.1 } },
        { str: 'Date of birth:', rect: { x: 0.05, y: 0.3, width: 0.08, height: 0.02 } },
      ],
      candidates: [
        candidate({ label: 'Full name', rect: { x: 0.12, y: 0.2, width: 0.3, height: 0.03 }, confidence: 0.7 }),
        candidate({ label: 'Line', rect: { x: 0, y: 0.5, width: 1, height: 0.004 }, confidence: 0.3 }),
        candidate({ label: 'Date of birth', rect: { x: 0.15, y: 0.3, width: 0.2, height: 0.03 }, confidence: 0.5 }),
      ],
    },
    { pageNumber: 2, text: [{ str: 'Terms and conditions', rect: { x: 0.1, y: 0.1, width: 0.5, height: 0.02 } }], candidates: [] },
    {
      pageNumber: 3,
      text: [{ str: 'Signature of the tenant', rect: { x: 0.1, y: 0.8, width: 0.3, height: 0.02 } }],
      candidates: [candidate({ pageNumber: 3, label: 'Signature', rect: { x: 0.1, y: 0.75, width: 0.3, height: 0.05 }, confidence: 0.8 })],
    },
  ];
}

describe('ai engine: refineWithAi', () => {
  it('applies labels, types, roles and required, drops keep:false, keeps unmentioned candidates, sends only text and candidates', async () => {
    const endpoint = await fakeEndpoint((res, n) => {
      if (n === 1) {
        answer(res, {
          fields: [
            { candidate: 0, keep: true, label: '  Full legal name ', type: 'short_text', role: null, required: true },
            { candidate: 1, keep: false },
          ],
        });
      } else {
        answer(res, { fields: [{ candidate: 0, keep: true, label: 'Tenant signature', type: 'digital_signature', role: 'signer_1', required: true }] });
      }
    });
    const warnings: string[] = [];
    const input = pages();
    const fields = await refineWithAi(input, config(endpoint.baseUrl), warnings);

    assert.deepEqual(warnings, []);
    assert.deepEqual(fields, [
      { type: 'short_text', label: 'Full legal name', pageNumber: 1, rect: { x: 0.12, y: 0.2, width: 0.3, height: 0.03 }, confidence: 0.7, source: 'ai', assigneeRole: null, isRequired: true, isReadOnly: false, options: {} },
      { ...input[0]!.candidates[2]!, source: 'layout' },
      { type: 'digital_signature', label: 'Tenant signature', pageNumber: 3, rect: { x: 0.1, y: 0.75, width: 0.3, height: 0.05 }, confidence: 0.8, source: 'ai', assigneeRole: 'signer_1', isRequired: true, isReadOnly: false, options: {} },
    ]);

    // One request per page with candidates, in page order; page 2 has none and is not sent.
    assert.equal(endpoint.seen.length, 2);
    const [first, second] = endpoint.seen as [Seen, Seen];
    assert.equal(first.method, 'POST');
    assert.equal(first.url, '/v1/chat/completions');
    assert.equal(first.headers.authorization, `Bearer ${KEY}`);
    assert.match(String(first.headers['content-type']), /^application\/json/);
    const body = first.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['messages', 'model', 'response_format', 'temperature']);
    assert.equal(body.model, 'test-model-7b');
    assert.equal(body.temperature, 0);
    assert.deepEqual(body.response_format, { type: 'json_object' });
    const messages = body.messages as Array<{ role: string; content: string }>;
    assert.deepEqual(messages.map((m) => m.role), ['system', 'user']);
    assert.match(messages[0]!.content, /"fields"/);
    assert.match(messages[0]!.content, /digital_signature/);
    assert.doesNotMatch(messages[0]!.content, /type" is one of:[^\n]*\bdropdown\b/, 'choice types are not offered');
    // The user message is exactly the page's text lines (blank ones left out, boxes rounded) and its candidates.
    assert.deepEqual(JSON.parse(messages[1]!.content), {
      text: [
        { str: 'Full name:', rect: { x: 0.05, y: 0.2, width: 0.0512, height: 0.02 } },
        { str: 'Date of birth:', rect: { x: 0.05, y: 0.3, width: 0.08, height: 0.02 } },
      ],
      candidates: [
        { index: 0, rect: { x: 0.12, y: 0.2, width: 0.3, height: 0.03 }, type: 'short_text', label: 'Full name' },
        { index: 1, rect: { x: 0, y: 0.5, width: 1, height: 0.004 }, type: 'short_text', label: 'Line' },
        { index: 2, rect: { x: 0.15, y: 0.3, width: 0.2, height: 0.03 }, type: 'short_text', label: 'Date of birth' },
      ],
    });
    const user2 = JSON.parse((second.body as { messages: Array<{ content: string }> }).messages[1]!.content);
    assert.deepEqual(Object.keys(user2), ['text', 'candidates']);
    assert.equal(user2.text[0].str, 'Signature of the tenant');
    assert.doesNotMatch(JSON.stringify(first.body) + JSON.stringify(second.body), /Terms and conditions|pageNumber|"page"/);
    // The input is not changed.
    assert.deepEqual(input, pages());
  });

  it('sends no Authorization header without a key, and strips a trailing slash of the base URL', async () => {
    const endpoint = await fakeEndpoint((res) => answer(res, { fields: [] }));
    const fields = await refineWithAi([pages()[2]!], config(`${endpoint.baseUrl}/`, { apiKey: null }), []);
    assert.equal(endpoint.seen.length, 1);
    assert.equal(endpoint.seen[0]!.url, '/v1/chat/completions');
    assert.equal(endpoint.seen[0]!.headers.authorization, undefined);
    assert.deepEqual(fields, pages()[2]!.candidates, 'an empty answer keeps every candidate as layout gave it');
  });

  it('times out each request, retries maxRetries times, then falls back to the layout result with a warning', async () => {
    const endpoint = await fakeEndpoint(() => {
      // never answers
    });
    const warnings: string[] = [];
    const started = Date.now();
    const fields = await refineWithAi([pages()[0]!], config(endpoint.baseUrl, { timeoutMs: 150, maxRetries: 2 }), warnings);
    assert.equal(endpoint.seen.length, 3, 'maxRetries + 1 requests');
    assert.deepEqual(fields, pages()[0]!.candidates);
    assert.deepEqual(warnings, ['ai: page 1: the AI endpoint timed out after 150 ms (3 attempts); the layout result is used']);
    // 3 × 150 ms plus backoffs of 250 and 500 ms.
    assert.ok(Date.now() - started >= 1100, `took ${Date.now() - started} ms`);
  });

  it('retries after HTTP 500 and uses the answer that follows', async () => {
    const endpoint = await fakeEndpoint((res, n) => (n === 1 ? status(res, 500) : answer(res, { fields: [{ candidate: 0, label: 'Signed by', type: 'digital_signature' }] })));
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl), warnings);
    assert.equal(endpoint.seen.length, 2);
    assert.deepEqual(warnings, []);
    assert.equal(fields.length, 1);
    assert.equal(fields[0]!.source, 'ai');
    assert.equal(fields[0]!.label, 'Signed by');
    assert.equal(fields[0]!.type, 'digital_signature');
    assert.equal(fields[0]!.isRequired, false, 'required not given: the candidate keeps its own');
  });

  it('retries after HTTP 429', async () => {
    const endpoint = await fakeEndpoint((res, n) => (n === 1 ? status(res, 429) : answer(res, { fields: [{ candidate: 0, keep: false }] })));
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl), warnings);
    assert.equal(endpoint.seen.length, 2);
    assert.deepEqual(fields, []);
    assert.deepEqual(warnings, []);
  });

  it('falls back after HTTP 500 on every attempt; the warning never holds the key', async () => {
    const endpoint = await fakeEndpoint((res) => status(res, 500));
    const warnings: string[] = [];
    const input = pages();
    const fields = await refineWithAi(input, config(endpoint.baseUrl, { maxRetries: 1 }), warnings);
    assert.equal(endpoint.seen.length, 4, 'two pages, two attempts each');
    assert.deepEqual(fields, [...input[0]!.candidates, ...input[2]!.candidates]);
    assert.deepEqual(warnings, [
      'ai: page 1: the AI endpoint answered HTTP 500 (2 attempts); the layout result is used',
      'ai: page 3: the AI endpoint answered HTTP 500 (2 attempts); the layout result is used',
    ]);
    assert.ok(!warnings.join('\n').includes(KEY));
  });

  it('does not retry HTTP 4xx other than 429', async () => {
    const endpoint = await fakeEndpoint((res) => status(res, 401));
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl), warnings);
    assert.equal(endpoint.seen.length, 1);
    assert.deepEqual(fields, pages()[2]!.candidates);
    assert.deepEqual(warnings, ['ai: page 3: the AI endpoint answered HTTP 401; the layout result is used']);

    // Nor a redirect: it is not followed (the key stays with the configured endpoint).
    const redirecting = await fakeEndpoint((res) => {
      res.writeHead(302, { location: `${endpoint.baseUrl}/chat/completions` });
      res.end();
    });
    const more: string[] = [];
    await refineWithAi([pages()[2]!], config(redirecting.baseUrl), more);
    assert.equal(redirecting.seen.length, 1);
    assert.equal(endpoint.seen.length, 1);
    assert.deepEqual(more, ['ai: page 3: the AI endpoint answered HTTP 302; the layout result is used']);
  });

  it('falls back when the endpoint cannot be reached', async () => {
    const port = await freePort();
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(`http://127.0.0.1:${port}/v1`, { maxRetries: 0 }), warnings);
    assert.deepEqual(fields, pages()[2]!.candidates);
    assert.deepEqual(warnings, ['ai: page 3: the AI endpoint could not be reached (ECONNREFUSED); the layout result is used']);
  });

  it('retries a body that is not JSON once, then falls back', async () => {
    const endpoint = await fakeEndpoint((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices": [ {"message": ');
    });
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl, { maxRetries: 5 }), warnings);
    assert.equal(endpoint.seen.length, 2, 'one retry only, whatever maxRetries');
    assert.deepEqual(fields, pages()[2]!.candidates);
    assert.deepEqual(warnings, ["ai: page 3: the AI endpoint's answer is not JSON (2 attempts); the layout result is used"]);
  });

  it('falls back when the content is not JSON, has no fields list, or there is no content', async () => {
    const cases: Array<[Reply, string]> = [
      [(res) => answer(res, 'Sure! Here are the fields you asked for.'), "the model's answer is not JSON"],
      [(res) => answer(res, { fields: 'none' }), 'the model\'s answer has no "fields" list'],
      [(res) => answer(res, [1, 2]), 'the model\'s answer has no "fields" list'],
      [
        (res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ choices: [] }));
        },
        "the AI endpoint's answer has no choices[0].message.content",
      ],
    ];
    for (const [reply, problem] of cases) {
      const endpoint = await fakeEndpoint(reply);
      const warnings: string[] = [];
      const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl, { maxRetries: 2 }), warnings);
      assert.equal(endpoint.seen.length, 2, problem);
      assert.deepEqual(fields, pages()[2]!.candidates, problem);
      assert.deepEqual(warnings, [`ai: page 3: ${problem} (2 attempts); the layout result is used`]);
    }
  });

  it('accepts content wrapped in a Markdown code fence', async () => {
    const endpoint = await fakeEndpoint((res) => answer(res, '```json\n{"fields":[{"candidate":0,"label":"Landlord"}]}\n```'));
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl), []);
    assert.equal(fields[0]!.label, 'Landlord');
    assert.equal(fields[0]!.source, 'ai');
  });

  it('refuses an answer larger than 1 MB', async () => {
    const endpoint = await fakeEndpoint((res) => answer(res, { fields: [], padding: 'x'.repeat(1_100_000) }));
    const warnings: string[] = [];
    const fields = await refineWithAi([pages()[2]!], config(endpoint.baseUrl, { maxRetries: 0 }), warnings);
    assert.deepEqual(fields, pages()[2]!.candidates);
    assert.deepEqual(warnings, ["ai: page 3: the AI endpoint's answer is larger than 1048576 bytes; the layout result is used"]);
  });

  it('trusts nothing in the answer', async () => {
    const input: AiPageInput = {
      pageNumber: 2,
      text: [],
      candidates: [
        candidate({ pageNumber: 2, type: 'date', label: 'Date', rect: { x: 0.7, y: 0.05, width: 0.2, height: 0.03 }, confidence: 0.4 }),
        candidate({ pageNumber: 2, type: 'checkbox', label: 'Agree', rect: { x: 0.1, y: 0.5, width: 0.02, height: 0.02 }, confidence: 0.9, assigneeRole: 'signer_2' }),
        candidate({ pageNumber: 2, label: 'Kept as is', rect: { x: 0.1, y: 0.6, width: 0.3, height: 0.03 } }),
        candidate({ pageNumber: 2, label: 'Tiny', rect: { x: 0.1, y: 0.7, width: 0.3, height: 0.03 } }),
        candidate({ pageNumber: 2, type: 'mcq', label: 'Colour', options: { choices: ['Red', 'Blue'] }, rect: { x: 0.1, y: 0.8, width: 0.3, height: 0.03 } }),
        candidate({ pageNumber: 2, type: 'dropdown', label: 'Size', options: { choices: ['S', 'M'] }, rect: { x: 0.5, y: 0.8, width: 0.3, height: 0.03 } }),
      ],
    };
    const endpoint = await fakeEndpoint((res) =>
      answer(res, {
        fields: [
          // Off the page on two sides: clamped. Unknown type, bad role, huge label, page number and confidence ignored.
          { candidate: 0, keep: true, label: 'L'.repeat(10_000), type: 'evil_type', role: 'signer 1; DROP TABLE', required: 'yes', pageNumber: 7, confidence: 5, rect: { x: 0.9, y: -0.1, width: 0.3, height: 0.2 } },
          // Entirely off the page: the layout box is kept. A choice type it has no choices for: the layout type is kept.
          { candidate: 1, label: '\u0000Agree\u0007 to\n\tthe  terms\u202e ', type: 'mcq', role: 'signer_3', rect: { x: 2, y: 2, width: 1, height: 1 } },
          // Unusable entries.
          { candidate: 99, keep: false },
          { candidate: -1, keep: false },
          { candidate: '3', keep: false },
          { candidate: 1.5, keep: false },
          'candidate 3 is not a field',
          null,
          [3],
          { candidate: 0, keep: false },
          { candidate: 2, keep: 'false' },
          // An absurdly thin box: the layout box is kept; a blank label: the layout label is kept.
          { candidate: 3, rect: { x: 0.1, y: 0.7, width: 0.3, height: 0.001 }, label: ' \u0001 ', role: 42, type: 'long_text' },
          // A choice candidate may keep its choice type (with its choices), or become another type (without them).
          { candidate: 4, type: 'mcq', label: 'Favourite colour' },
          { candidate: 5, type: 'short_text', rect: { x: '0.1', y: 0.8, width: 0.3, height: 0.03 } },
        ],
      }),
    );
    const warnings: string[] = [];
    const fields = await refineWithAi([input], config(endpoint.baseUrl), warnings);
    assert.equal(fields.length, 6);
    const [a, b, c, d, e, f] = fields as [DetectedField, DetectedField, DetectedField, DetectedField, DetectedField, DetectedField];
    assert.deepEqual(a, {
      type: 'date',
      label: 'L'.repeat(200),
      pageNumber: 2,
      rect: { x: 0.9, y: 0, width: 0.1, height: 0.1 },
      confidence: 0.4,
      source: 'ai',
      assigneeRole: null,
      isRequired: false,
      isReadOnly: false,
      options: {},
    });
    assert.deepEqual(b, { ...input.candidates[1]!, label: 'Agree to the terms', assigneeRole: 'signer_3', source: 'ai' });
    assert.deepEqual(c, input.candidates[2], 'a keep that is not a boolean is ignored');
    assert.deepEqual(d, { ...input.candidates[3]!, type: 'long_text', assigneeRole: null, source: 'ai' });
    assert.deepEqual(e, { ...input.candidates[4]!, label: 'Favourite colour', source: 'ai', options: { choices: ['Red', 'Blue'] } });
    assert.deepEqual(f, { ...input.candidates[5]!, type: 'short_text', source: 'ai', options: {} });
    for (const field of fields) {
      assert.equal(field.pageNumber, 2);
      assert.ok(field.rect.x >= 0 && field.rect.y >= 0 && field.rect.x + field.rect.width <= 1 && field.rect.y + field.rect.height <= 1);
    }
    assert.deepEqual(warnings, [
      'ai: page 2: 9 unusable entries ignored (not an object, an unknown or repeated candidate index, or a keep that is not true/false); ' +
        '2 unknown or not allowed field types (the layout type is kept); 3 unusable boxes (the layout box is kept); 2 invalid roles (no role is set)',
    ]);
  });

  it('rejects when the signal aborts during a request, without a fallback or a warning', async () => {
    const endpoint = await fakeEndpoint(() => {
      // never answers
    });
    const controller = new AbortController();
    const warnings: string[] = [];
    const reason = new Error('job stopped');
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();
    await assert.rejects(refineWithAi(pages(), config(endpoint.baseUrl, { timeoutMs: 10_000 }), warnings, { signal: controller.signal }), (error) => error === reason);
    assert.ok(Date.now() - started < 2000);
    assert.equal(endpoint.seen.length, 1);
    assert.deepEqual(warnings, []);
  });

  it('rejects when the signal aborts during a backoff, and at once when it is aborted already', async () => {
    const controller = new AbortController();
    const endpoint = await fakeEndpoint((res) => {
      status(res, 503);
      setTimeout(() => controller.abort(new Error('stopped')), 50);
    });
    const warnings: string[] = [];
    await assert.rejects(refineWithAi(pages(), config(endpoint.baseUrl, { maxRetries: 5 }), warnings, { signal: controller.signal }), /stopped/);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(endpoint.seen.length, 1, 'no retry after the abort');
    assert.deepEqual(warnings, []);

    const before = endpoint.seen.length;
    await assert.rejects(refineWithAi(pages(), config(endpoint.baseUrl), warnings, { signal: AbortSignal.abort(new Error('gone')) }), /gone/);
    assert.equal(endpoint.seen.length, before);
  });

  it('uses the fetch it is given', async () => {
    const calls: string[] = [];
    const fakeFetch = (async (url: string | URL | Request) => {
      calls.push(String(url));
      return new Response(JSON.stringify({ choices: [{ message: { content: '{"fields":[{"candidate":0,"keep":false}]}' } }] }), { status: 200 });
    }) as typeof fetch;
    const fields = await refineWithAi([pages()[2]!], config('http://ai.invalid/v1'), [], { fetch: fakeFetch });
    assert.deepEqual(calls, ['http://ai.invalid/v1/chat/completions']);
    assert.deepEqual(fields, []);
  });
});

describe('the ai engine in the pipeline: a time budget for the whole review', () => {
  it('an endpoint that never answers costs the review of the pages it did not reach, never the job; progress waits for the review', async () => {
    const { drawPdf } = await import('../helpers/layout-pdf.js');
    const { detectFields } = await import('../../src/detect/pipeline.js');
    const hanging = http.createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const { port } = hanging.address() as AddressInfo;
    const page = { draw: (d: { text: (t: string, x: number, y: number, size?: number) => void; rule: (a: number, b: number, y: number, thickness?: number) => void }) => (d.text('Full name', 72, 702, 10), d.rule(130, 360, 700, 0.75)) };
    const data = await drawPdf([page, page, page]);
    const { openForDetection } = await import('../../src/detect/open.js');
    const progress: number[] = [];
    const task = openForDetection(data);
    const started = performance.now();
    try {
      const result = await detectFields(await task.promise, {
        engine: 'ai',
        ai: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: null, model: 'm', timeoutMs: 60_000, maxRetries: 0 },
        aiBudgetMs: 400,
        onProgress: (done) => progress.push(done),
      });
      assert.ok(performance.now() - started < 5000, 'the budget, not the request timeout, bounds the review');
      assert.deepEqual(result.fields.map((f) => [f.pageNumber, f.source, f.label]), [1, 2, 3].map((n) => [n, 'layout', 'Full name']));
      assert.deepEqual(result.stats.warnings, [1, 2, 3].map((n) => `ai: page ${n}: the AI review ran out of its time; the layout result is used`));
      // Pages with candidates are done once reviewed: nothing counts as done while they wait.
      assert.deepEqual(progress, [0, 1, 2, 3]);
    } finally {
      await task.destroy();
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('in a detection thread, the review ends inside the thread\'s time limit: the job completes with layout fields, it does not time out', async () => {
    const { drawPdf } = await import('../helpers/layout-pdf.js');
    const { detectInProcess } = await import('../../src/detect/runner.js');
    const hanging = http.createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const { port } = hanging.address() as AddressInfo;
    const page = { draw: (d: { text: (t: string, x: number, y: number, size?: number) => void; rule: (a: number, b: number, y: number, thickness?: number) => void }) => (d.text('Full name', 72, 702, 10), d.rule(130, 360, 700, 0.75)) };
    try {
      // A 6-second limit, far under the review's own 5-minute budget (and room for the process to
      // start and read the page on a loaded machine: about 1 s when idle).
      const result = await detectInProcess(await drawPdf([page]), {
        engine: 'ai',
        ai: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: null, model: 'm', timeoutMs: 60_000, maxRetries: 0 },
        timeoutMs: 6000,
      });
      assert.deepEqual(result.fields.map((f) => [f.pageNumber, f.source, f.label]), [[1, 'layout', 'Full name']]);
      assert.deepEqual(result.stats.warnings, ['ai: page 1: the AI review ran out of its time; the layout result is used']);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });
});
