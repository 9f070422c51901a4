// Which addresses an outbound webhook may reach (docs/contract.md §9: no private or loopback addresses
// unless SERVICE_ALLOW_PRIVATE_WEBHOOKS). Checked on the *resolved* addresses, since any public
// name can point at 127.0.0.1 or the cloud metadata service (169.254.169.254).
import { isIP } from 'node:net';

/** IPv4 ranges that are not the public internet (RFC 6890 special-purpose registry, the usual ones). */
const V4_BLOCKED: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function inV4Range(ip: string, base: string, bits: number): boolean {
  const size = 2 ** (32 - bits);
  return Math.floor(v4ToInt(ip) / size) === Math.floor(v4ToInt(base) / size);
}

/** The 8 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail expanded). */
function v6Groups(ip: string): number[] {
  let text = ip.toLowerCase().split('%')[0]!;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const n = v4ToInt(tail[1]!);
    text = `${text.slice(0, -tail[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const a = parse(head);
  if (rest === undefined) return a;
  const b = parse(rest);
  return [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
}

function v4FromGroups(hi: number, lo: number): string {
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/** True for loopback, private, link-local, CGNAT, multicast, reserved and unspecified addresses. */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip.split('%')[0]!);
  if (family === 4) return V4_BLOCKED.some(([base, bits]) => inV4Range(ip, base, bits));
  if (family !== 6) return true; // not an address at all: never "public"
  const g = v6Groups(ip);
  const [g0 = 0, , , , , g5 = 0, g6 = 0, g7 = 0] = g;
  if (g.every((x) => x === 0)) return true; // ::
  if (g.slice(0, 7).every((x) => x === 0) && g7 === 1) return true; // ::1
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible / NAT64 (64:ff9b::a.b.c.d): judge the IPv4 inside.
  if (g.slice(0, 5).every((x) => x === 0) && (g5 === 0xffff || g5 === 0)) return isPrivateAddress(v4FromGroups(g6, g7));
  if (g0 === 0x64 && g[1] === 0xff9b) return isPrivateAddress(v4FromGroups(g6, g7));
  if (g0 === 0x2002) return isPrivateAddress(v4FromGroups(g[1] ?? 0, g[2] ?? 0)); // 6to4
  if ((g0 & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((g0 & 0xff00) === 0xff00) return true; // multicast
  if (g0 === 0x2001 && g[1] === 0x0db8) return true; // documentation
  return false;
}

export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/** The scheme half of the SSRF guard (the address half needs DNS): https only unless allowed. */
export function checkOutboundUrl(target: string, allowPrivate: boolean): UrlVerdict {
  if (!URL.canParse(target)) return { ok: false, reason: 'not a URL' };
  const url = new URL(target);
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: `${url.protocol.replace(':', '')} is not allowed (https only; SERVICE_ALLOW_PRIVATE_WEBHOOKS=true allows http)` };
  }
  return { ok: true, url };
}
