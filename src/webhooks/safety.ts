import dns from 'node:dns';
import net from 'node:net';

/** What outbound deliveries may reach (settings `WEBHOOK_ALLOW_HTTP`, `WEBHOOK_ALLOW_PRIVATE`). */
export interface OutboundPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

export class UnsafeTargetError extends Error {
  override name = 'UnsafeTargetError';
}

/**
 * Addresses a webhook must never reach unless `WEBHOOK_ALLOW_PRIVATE=true`: this host, private
 * networks, link-local (cloud metadata services live at 169.254.169.254 and fd00:ec2::254),
 * carrier-grade NAT (Alibaba's metadata at 100.100.100.200), multicast, reserved and
 * documentation ranges. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is checked as IPv4.
 */
const BLOCKED = new net.BlockList();
for (const [address, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(address, bits, 'ipv4');
}
for (const [address, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(address, bits, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), if any. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!);
  if (zero(0, 6) && (groups[6] !== 0 || groups[7]! > 1)) return v4(groups[6]!, groups[7]!); // IPv4-compatible (deprecated)
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return null;
}

function expandIpv6(address: string): number[] | null {
  let text = address.split('%', 1)[0]!;
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) as two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const parts = dotted[1]!.split('.').map(Number);
    text = text.slice(0, -dotted[1]!.length) + `${((parts[0]! << 8) | parts[1]!).toString(16)}:${((parts[2]! << 8) | parts[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === null ? left.length !== 8 : missing < 0) return null;
  const groups = [...left, ...Array<string>(tail === null ? 0 : missing).fill('0'), ...right].map((g) => parseInt(g || '0', 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** Why `address` (an IP literal) may not be reached, or `null` when it may. */
export function blockedAddress(address: string): string | null {
  const family = net.isIP(address);
  if (family === 0) return 'is not an IP address';
  if (family === 4) return BLOCKED.check(address, 'ipv4') ? `${address} is a loopback, private, link-local or reserved address` : null;
  const embedded = embeddedIpv4(address);
  if (embedded && BLOCKED.check(embedded, 'ipv4')) return `${address} carries the IPv4 address ${embedded}, which is loopback, private, link-local or reserved`;
  return BLOCKED.check(address, 'ipv6') ? `${address} is a loopback, private, link-local or reserved address` : null;
}

/** The URL's host as `net.connect` takes it (IPv6 literals without their brackets). */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Checks what can be checked without the network: scheme, credentials, an IP literal host. */
export function checkUrlShape(raw: string, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeTargetError('is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw new UnsafeTargetError(policy.allowHttp ? 'must be an http or https URL' : 'must be an https URL (plain http is refused unless WEBHOOK_ALLOW_HTTP=true)');
  }
  if (url.username || url.password) throw new UnsafeTargetError('must not hold a user name or password');
  if (url.hash) throw new UnsafeTargetError('must not have a #fragment');
  const host = hostOf(url);
  if (!policy.allowPrivate && net.isIP(host)) {
    const why = blockedAddress(host);
    if (why) throw new UnsafeTargetError(`must not point to a private address: ${why} (allowed only with WEBHOOK_ALLOW_PRIVATE=true)`);
  }
  return url;
}

export type LookupFn = (hostname: string, options: dns.LookupAllOptions) => Promise<dns.LookupAddress[]>;

const systemLookup: LookupFn = (hostname, options) => dns.promises.lookup(hostname, options);

/**
 * Resolves `host` and answers the addresses it may reach, refusing the whole name when any of
 * its addresses is blocked (a name that resolves to a public and a private address is not let
 * through on a lucky pick).
 */
/**
 * One message whether a name does not resolve or resolves to a blocked address, and never the
 * address itself: a key holder must not learn from it which internal names exist and where
 * they point (issue 20 review).
 */
const NO_PUBLIC_ADDRESS = (host: string) =>
  `host ${host} does not resolve to a public address (private addresses are allowed only with WEBHOOK_ALLOW_PRIVATE=true)`;

export async function resolveChecked(host: string, policy: OutboundPolicy, lookup: LookupFn = systemLookup): Promise<dns.LookupAddress[]> {
  if (net.isIP(host)) {
    const why = policy.allowPrivate ? null : blockedAddress(host);
    if (why) throw new UnsafeTargetError(`must not point to a private address: ${why} (allowed only with WEBHOOK_ALLOW_PRIVATE=true)`);
    return [{ address: host, family: net.isIP(host) }];
  }
  let addresses: dns.LookupAddress[];
  try {
    addresses = await lookup(host, { all: true });
  } catch (error) {
    throw new UnsafeTargetError(NO_PUBLIC_ADDRESS(host));
  }
  if (addresses.length === 0) throw new UnsafeTargetError(NO_PUBLIC_ADDRESS(host));
  if (!policy.allowPrivate) {
    for (const { address } of addresses) {
      if (blockedAddress(address)) throw new UnsafeTargetError(NO_PUBLIC_ADDRESS(host));
    }
  }
  return addresses;
}

/**
 * A `lookup` for `net.connect`/`tls.connect` that hands the socket only addresses that passed
 * the check: the connection goes to exactly the address that was checked, so a name that
 * changes its answer between the check and the connection (DNS rebinding) cannot slip through.
 */
export function checkedLookup(policy: OutboundPolicy, lookup: LookupFn = systemLookup) {
  return (hostname: string, options: dns.LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void): void => {
    resolveChecked(hostname, policy, lookup).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (wanted.length === 0) return callback(Object.assign(new Error(`host ${hostname} has no IPv${String(options.family)} address`), { code: 'ENOTFOUND' }), '');
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => callback(Object.assign(error, { code: 'EUNSAFE' }), ''),
    );
  };
}
