/** The DNS-rebinding guard of `serve` without an API key: a page can point its name at 127.0.0.1,
 * but the browser still sends its own Host, so only Hosts naming this server are answered. */
import { isIPv6 } from "node:net";
import os from "node:os";
import { setNewest } from "../core/newest.js";

export interface TrustedHostsOptions {
  /** What `--host` named: an address, a name, or a wildcard (0.0.0.0, ::). */
  readonly bindHost: string;
  /** More names (`--allowed-host`); `*.example.com` allows every name under example.com. */
  readonly allowed?: readonly string[] | undefined;
}

const WILDCARDS = new Set(["", "0.0.0.0", "::", "[::]"]);
/** Host values whose verdict is remembered, and the longest one remembered. */
const MAX_REMEMBERED = 256;
const MAX_REMEMBERED_LENGTH = 255;

/** A Host value's host, canonical (127.1 → 127.0.0.1), without port; undefined if not host[:port]. */
export function hostOf(value: string): string | undefined {
  const text = isIPv6(value) ? `[${value}]` : value;
  const url = URL.parse(`http://${text}`);
  if (!url) return undefined;
  // "localhost@evil.example" or "evil.example/x" would otherwise parse to something else.
  if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) {
    return undefined;
  }
  return url.hostname.replace(/\.$/, "") || undefined;
}

function isLoopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost") || host === "[::1]") return true;
  return /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The machine's own names and addresses, for a server bound to every interface. */
function ownNames(): string[] {
  const names = [os.hostname()];
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) names.push(address.address);
  }
  return names;
}

/** Checks the Host header; none passes (browsers always send one, so it is no rebinding). */
export function trustedHosts(options: TrustedHostsOptions): (host: string | undefined) => boolean {
  const exact = new Set<string>();
  const suffixes: string[] = [];
  const add = (name: string) => {
    const host = hostOf(name);
    if (host) exact.add(host);
  };
  if (WILDCARDS.has(options.bindHost)) ownNames().forEach(add);
  else add(options.bindHost);
  for (const name of options.allowed ?? []) {
    if (name.startsWith("*.")) {
      const base = hostOf(name.slice(2));
      if (base) suffixes.push(`.${base}`);
    } else add(name);
  }
  const judge = (header: string) => {
    const host = hostOf(header);
    if (host === undefined) return false;
    return isLoopback(host) || exact.has(host) || suffixes.some((suffix) => host.endsWith(suffix));
  };
  // Callers send the same few Host values: each is judged once (parsing it as a URL was a
  // hundredth of a verify). Bounded, as the values are the caller's to choose.
  const judged = new Map<string, boolean>();
  return (header) => {
    if (header === undefined) return true;
    const known = judged.get(header);
    if (known !== undefined) return known;
    const verdict = judge(header);
    if (header.length <= MAX_REMEMBERED_LENGTH) {
      setNewest(judged, header, verdict, MAX_REMEMBERED);
    }
    return verdict;
  };
}
