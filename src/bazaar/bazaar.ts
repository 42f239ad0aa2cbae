/** The `bazaar` extension of a v2 payment, per the spec's "Facilitator Behavior": a wrong schema,
 * info or URL refuses it whole; a wrong field alone is dropped with a note. */
import { isObject } from "../protocol/words.js";
import { routeTemplateProblem, sanitizeServiceMetadata } from "./bazaar-metadata.js";
import { validateJsonSchema } from "./json-schema.js";

export const BAZAAR = "bazaar";

/** Largest `extensions.bazaar` kept, as JSON. */
export const BAZAAR_BYTES_LIMIT = 16 * 1024;
/** Longest resource URL, description, MIME type and MCP tool name kept. */
export const RESOURCE_URL_LIMIT = 2048;
const DESCRIPTION_LIMIT = 1024;
const MIME_TYPE_LIMIT = 128;
const TOOL_NAME_LIMIT = 128;
/** Other extensions a catalogue entry names (their keys only), at most. */
const OTHER_EXTENSIONS_KEPT = 8;
const EXTENSION_KEY = /^[A-Za-z0-9._:-]{1,64}$/;

const QUERY_METHODS = ["GET", "HEAD", "DELETE"];
const BODY_METHODS = ["POST", "PUT", "PATCH"];
const BODY_TYPES = ["json", "form-data", "text"];
const MCP_TRANSPORTS = ["streamable-http", "sse"];

/** What the catalogue keeps of one resource, from one payment. */
export interface Discovered {
  /** The catalogue's URL for it: origin + routeTemplate, or origin + path. */
  readonly resource: string;
  readonly type: "http" | "mcp";
  /** MCP: the tool; with `resource`, what the entry is keyed by. */
  readonly toolName?: string | undefined;
  readonly method?: string | undefined;
  readonly routeTemplate?: string | undefined;
  readonly description?: string | undefined;
  readonly mimeType?: string | undefined;
  readonly serviceName?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly iconUrl?: string | undefined;
  /** The bazaar extension as checked: `info`, `schema`, and `routeTemplate` when kept. */
  readonly bazaar: Readonly<Record<string, unknown>>;
  /** The keys of the other extensions the payment carried (their contents are not kept). */
  readonly otherExtensions: readonly string[];
}

export type Discovery =
  | { readonly ok: true; readonly discovered: Discovered; readonly notes: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** A v2 payment's discovery: none, refused with a reason, or what to catalogue (and notes). */
export function discover(
  resource: unknown,
  extensions: Readonly<Record<string, unknown>> | undefined,
): Discovery | undefined {
  const extension = extensions?.[BAZAAR];
  if (extension === undefined || extension === null) return undefined;
  const refuse = (reason: string): Discovery => ({ ok: false, reason });
  if (!isObject(extension) || !isObject(extension.info) || extension.schema === undefined) {
    return refuse("extensions.bazaar must be an object with info (an object) and schema");
  }
  const bytes = Buffer.byteLength(JSON.stringify(extension));
  if (bytes > BAZAAR_BYTES_LIMIT) {
    return refuse(`extensions.bazaar is ${bytes} bytes; at most ${BAZAAR_BYTES_LIMIT} are kept`);
  }
  const verdict = validateJsonSchema(extension.schema, extension.info);
  if (!verdict.valid) {
    return refuse(
      "unusable" in verdict
        ? `schema is not usable: ${verdict.unusable}`
        : `info does not match its schema: ${verdict.errors.join("; ")}`,
    );
  }
  const input = extension.info.input;
  const inputProblem = inputProblemOf(input);
  if (inputProblem) return refuse(inputProblem);
  const checked = input as Record<string, unknown>;

  if (!isObject(resource) || typeof resource.url !== "string") {
    return refuse("resource.url is missing: the catalogue keys a resource by its URL");
  }
  const url = URL.parse(resource.url);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    return refuse("resource.url must be an absolute http or https URL");
  }
  if (resource.url.length > RESOURCE_URL_LIMIT) {
    return refuse(`resource.url is longer than ${RESOURCE_URL_LIMIT} characters`);
  }

  const notes: string[] = [];
  let routeTemplate: string | undefined;
  if (extension.routeTemplate !== undefined) {
    const problem = routeTemplateProblem(extension.routeTemplate);
    if (problem) notes.push(`routeTemplate dropped (the URL's path keys it): it ${problem}`);
    else routeTemplate = extension.routeTemplate as string;
  }
  const metadata = sanitizeServiceMetadata(resource);
  notes.push(...metadata.dropped);
  const text = (name: "description" | "mimeType", limit: number) => {
    const value = resource[name];
    if (value === undefined) return undefined;
    if (typeof value === "string" && value.length <= limit) return value;
    notes.push(`${name} dropped: it must be a string of at most ${limit} characters`);
    return undefined;
  };
  const description = text("description", DESCRIPTION_LIMIT);
  const mimeType = text("mimeType", MIME_TYPE_LIMIT);

  const others = Object.keys(extensions ?? {}).filter((k) => k !== BAZAAR);
  const otherExtensions = others
    .filter((k) => EXTENSION_KEY.test(k))
    .slice(0, OTHER_EXTENSIONS_KEPT);
  if (otherExtensions.length < others.length) {
    notes.push(`${others.length - otherExtensions.length} other extension keys not listed`);
  }

  const type = checked.type as "http" | "mcp";
  const discovered: Discovered = {
    resource: `${url.origin}${routeTemplate ?? url.pathname}`,
    type,
    ...(type === "mcp"
      ? { toolName: checked.toolName as string }
      : { method: checked.method as string | undefined, routeTemplate }),
    description,
    mimeType,
    ...metadata.kept,
    bazaar: {
      info: extension.info,
      schema: extension.schema,
      ...(routeTemplate ? { routeTemplate } : {}),
    },
    otherExtensions,
  };
  return { ok: true, discovered, notes };
}

/** What is wrong with `info.input` as the spec defines its two kinds, if anything. */
function inputProblemOf(input: unknown): string | undefined {
  if (!isObject(input)) return "info.input is missing (an object with a type is expected)";
  if (input.type === "http") {
    const { method, bodyType } = input;
    if (method !== undefined && ![...QUERY_METHODS, ...BODY_METHODS].includes(method as string)) {
      return `info.input.method must be one of ${[...QUERY_METHODS, ...BODY_METHODS].join(", ")}`;
    }
    if (bodyType !== undefined) {
      if (!BODY_TYPES.includes(bodyType as string)) {
        return `info.input.bodyType must be one of ${BODY_TYPES.join(", ")}`;
      }
      if (method !== undefined && !BODY_METHODS.includes(method as string)) {
        return `info.input.bodyType is set but ${String(method)} is not a body method (${BODY_METHODS.join(", ")})`;
      }
    }
    return undefined;
  }
  if (input.type === "mcp") {
    const { toolName, transport } = input;
    if (
      typeof toolName !== "string" ||
      toolName.length === 0 ||
      toolName.length > TOOL_NAME_LIMIT ||
      !/^[\x21-\x7e]+$/.test(toolName)
    ) {
      return `info.input.toolName must be 1 to ${TOOL_NAME_LIMIT} printable ASCII characters without spaces`;
    }
    if (!isObject(input.inputSchema)) return "info.input.inputSchema must be an object";
    if (transport !== undefined && !MCP_TRANSPORTS.includes(transport as string)) {
      return `info.input.transport must be one of ${MCP_TRANSPORTS.join(", ")}`;
    }
    return undefined;
  }
  return `info.input.type must be "http" or "mcp"`;
}
