import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { retryDelay, RETRY_SCHEDULE_MS } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/events.js';
import { blockedAddress, checkedLookup, checkUrlShape, resolveChecked } from '../../src/webhooks/safety.js';
import { signatureHeader, verifyWebhook } from '../../src/webhooks/signature.js';

describe('webhook outbound safety', () => {
  it('blocks loopback, private, link-local, metadata, reserved and IPv4 hidden in IPv6', () => {
    for (const address of [
      '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.100.100.200', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '198.18.0.1', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe', '2002:7f00:1::', '::127.0.0.1',
    ]) {
      assert.ok(blockedAddress(address), address);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      assert.equal(blockedAddress(address), null, address);
    }
  });

  it('checks the URL: https only unless http is allowed, IP literals, no credentials', () => {
    const strict = { allowHttp: false, allowPrivate: false };
    assert.throws(() => checkUrlShape('http://example.com/', strict), /https URL/);
    assert.throws(() => checkUrlShape('ftp://example.com/', { allowHttp: true, allowPrivate: false }), /http or https/);
    assert.throws(() => checkUrlShape('https://2130706433/', strict), /private address: 127\.0\.0\.1/); // 127.0.0.1 written as a number
    assert.throws(() => checkUrlShape('https://0x7f.1/', strict), /private address: 127\.0\.0\.1/);
    assert.throws(() => checkUrlShape('https://[fe80::1]/', strict), /private address/);
    assert.equal(checkUrlShape('https://127.0.0.1/', { allowHttp: false, allowPrivate: true }).hostname, '127.0.0.1');
    assert.equal(checkUrlShape('http://example.com/x?y=1', { allowHttp: true, allowPrivate: false }).toString(), 'http://example.com/x?y=1');
  });

  it('refuses a name when any of its addresses is private; the connection lookup hands out only checked addresses', async () => {
    const lookup = async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.8', family: 4 }];
    await assert.rejects(resolveChecked('mixed.test', { allowHttp: false, allowPrivate: false }, lookup), /mixed\.test does not resolve to a public address \(/);
    assert.equal((await resolveChecked('mixed.test', { allowHttp: false, allowPrivate: true }, lookup)).length, 2);
    const connectLookup = checkedLookup({ allowHttp: false, allowPrivate: false }, async () => [{ address: '127.0.0.1', family: 4 }]);
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => connectLookup('rebound.test', { all: true }, (e) => resolve(e)));
    assert.equal(error?.code, 'EUNSAFE');
    const publicLookup = checkedLookup({ allowHttp: false, allowPrivate: false }, async () => [{ address: '93.184.216.34', family: 4 }]);
    const single = await new Promise<unknown[]>((resolve) => publicLookup('fine.test', {}, (...args) => resolve(args)));
    assert.deepEqual(single, [null, '93.184.216.34', 4]);
  });
});

describe('webhook signatures', () => {
  it('sign as the standardwebhooks package does; our verifier and theirs agree', () => {
    const secret = newSecret();
    const body = JSON.stringify({ id: 'evt_1', event: 'form_created', data: { x: 'é' } });
    const at = new Date();
    const timestamp = Math.floor(at.getTime() / 1000);
    assert.equal(signatureHeader([secret], 'evt_1', timestamp, body), new Webhook(secret).sign('evt_1', at, body));
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([newSecret(), secret], 'evt_1', timestamp, body) };
    assert.deepEqual(verifyWebhook(secret, body, headers), JSON.parse(body));
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => verifyWebhook(secret, body.replace('é', 'e'), headers), /no signature matches/);
    assert.throws(() => verifyWebhook(newSecret(), body, headers), /no signature matches/);
    assert.throws(() => verifyWebhook(secret, body, { ...headers, 'webhook-timestamp': String(timestamp - 600) }), /too far/);
    assert.throws(() => verifyWebhook(secret, body, { 'webhook-id': 'evt_1' }), /missing/);
  });

  it('retries on the contract schedule with ±20 % jitter, then none', () => {
    assert.deepEqual([...RETRY_SCHEDULE_MS], [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    assert.equal(retryDelay(1, 1, () => 0), 4_000);
    assert.equal(retryDelay(1, 1, () => 0.999999), 6_000);
    assert.equal(retryDelay(7, 1, () => 0.5), 36_000_000);
    assert.equal(retryDelay(8, 1, () => 0.5), null);
    assert.equal(retryDelay(2, 0.001, () => 0.5), 300);
  });
});
