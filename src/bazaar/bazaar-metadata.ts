/** The bazaar spec's rules for a buyer's `resource` metadata: a bad field is dropped with a note,
 * as are icon hosts naming this machine or a private network (others fetch them from us). */
import { domainToASCII } from "node:url";

export const SERVICE_NAME_LIMIT = 32;
export const TAG_LIMIT = 32;
export const TAGS_KEPT = 5;
export const ICON_URL_LIMIT = 2048;

const ROUTE_TEMPLATE = /^\/[a-zA-Z0-9_/:.\-~%]+$/;
const DECODE_PASSES = 5;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;
/** Whether `value` holds a control character (C0 or DEL). */
const hasControl = (value: string) => [...value].some((c) => c < " " || c === "\x7f");
const LOOPBACK_NAMES = new Set([
  "localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
]);
const PRIVATE_SUFFIXES = [
  ".localhost",
  ".local",
  ".localdomain",
  ".internal",
  ".intranet",
  ".lan",
  ".home",
  ".corp",
  ".private",
  ".home.arpa",
];

/** `value` percent-decoded until it no longer changes (at most 5 passes); undefined if it won't. */
function fullyDecoded(value: string): string | undefined {
  let decoded = value;
  for (let i = 0; i < DECODE_PASSES; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return undefined;
    }
    if (next === decoded) return decoded;
    decoded = next;
  }
  return undefined;
}

/** Why a `routeTemplate` cannot key the catalogue, or undefined when it can. */
export function routeTemplateProblem(value: unknown): string | undefined {
  if (typeof value !== "string" || value === "") return "is not a non-empty string";
  if (!ROUTE_TEMPLATE.test(value)) {
    return "must start with / and hold only letters, digits and _ / : . - ~ %";
  }
  const decoded = fullyDecoded(value);
  if (decoded === undefined) return "does not percent-decode";
  if (decoded.includes("..")) return "contains .. (a path traversal), percent-decoded";
  if (decoded.includes("://")) return "contains :// (a URL), percent-decoded";
  return undefined;
}

/** Why a `serviceName` is dropped, or undefined when it is kept. */
export function serviceNameProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return "is not a string";
  if (value.length === 0 || value.length > SERVICE_NAME_LIMIT) {
    return `must have 1 to ${SERVICE_NAME_LIMIT} characters`;
  }
  if (!PRINTABLE_ASCII.test(value)) return "must be printable ASCII";
  return undefined;
}

/** The first 5 valid tags, deduplicated ignoring case (first spelling wins), and what was dropped. */
export function sanitizeTags(value: unknown): { tags?: string[]; dropped: string[] } {
  if (value === undefined) return { dropped: [] };
  if (!Array.isArray(value)) return { dropped: ["tags: not an array"] };
  const tags: string[] = [];
  const seen = new Set<string>();
  let invalid = 0;
  let beyond = 0;
  for (const entry of value) {
    if (
      typeof entry !== "string" ||
      entry.length === 0 ||
      entry.length > TAG_LIMIT ||
      !PRINTABLE_ASCII.test(entry)
    ) {
      invalid += 1;
      continue;
    }
    const key = entry.toLowerCase();
    if (seen.has(key)) continue;
    if (tags.length === TAGS_KEPT) {
      beyond += 1;
      continue;
    }
    seen.add(key);
    tags.push(entry);
  }
  const dropped = [
    ...(invalid > 0
      ? [`tags: ${invalid} dropped (each must be 1 to ${TAG_LIMIT} printable ASCII characters)`]
      : []),
    ...(beyond > 0 ? [`tags: ${beyond} past the first ${TAGS_KEPT} dropped`] : []),
  ];
  return tags.length > 0 ? { tags, dropped } : { dropped };
}

/** Why an `iconUrl` is dropped, or undefined when it is kept. */
export function iconUrlProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return "is not a string";
  if (value.length === 0 || value.length > ICON_URL_LIMIT) {
    return `must have 1 to ${ICON_URL_LIMIT} characters`;
  }
  if (hasControl(value)) return "contains control characters";
  const url = URL.parse(value);
  if (!url) return "is not an absolute URL";
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be http or https";
  if (url.username !== "" || url.password !== "") return "must not carry a user or password";
  if (url.host.startsWith("["))
    return "is an IPv6 address, which may point inside a private network";
  let host: string;
  try {
    host = domainToASCII(decodeURIComponent(url.hostname)).toLowerCase();
  } catch {
    return "has a host that does not percent-decode";
  }
  // The URL parser already reads 2130706433, 0x7f000001 and 127.1 as 127.0.0.1.
  host = host.replace(/\.+$/, "");
  if (host === "") return "has no usable host name";
  if (/^[\d.]+$/.test(host) || /^0x[0-9a-f]+$/i.test(host)) {
    return `has the IP address ${host} for a host, which may point inside a private network`;
  }
  if (LOOPBACK_NAMES.has(host) || host.endsWith(".localhost")) return "points at this machine";
  if (!host.includes(".")) return `has the single-label host ${host}, a private-network name`;
  const suffix = PRIVATE_SUFFIXES.find((s) => host.endsWith(s));
  if (suffix) return `has a host under ${suffix}, a private-network domain`;
  return undefined;
}

/** The service metadata kept from a `resource` object, and what was dropped, in words. */
export function sanitizeServiceMetadata(resource: Record<string, unknown>) {
  const kept: { serviceName?: string; tags?: string[]; iconUrl?: string } = {};
  const dropped: string[] = [];
  if (resource.serviceName !== undefined) {
    const problem = serviceNameProblem(resource.serviceName);
    if (problem) dropped.push(`serviceName dropped: it ${problem}`);
    else kept.serviceName = resource.serviceName as string;
  }
  const tags = sanitizeTags(resource.tags);
  if (tags.tags) kept.tags = tags.tags;
  dropped.push(...tags.dropped);
  if (resource.iconUrl !== undefined) {
    const problem = iconUrlProblem(resource.iconUrl);
    if (problem) dropped.push(`iconUrl dropped: it ${problem}`);
    else kept.iconUrl = resource.iconUrl as string;
  }
  return { kept, dropped };
}
