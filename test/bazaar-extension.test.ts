/**
 * Reading a payment's `bazaar` extension (src/bazaar/bazaar.ts and its JSON Schema checker),
 * with the official @x402/extensions 2.27 as the oracle: for what the official seller declares
 * (declareDiscoveryExtension, enriched as bazaarResourceServerExtension enriches it per request),
 * we catalogue what extractDiscoveryInfo extracts; our schema verdicts are validateDiscoveryExtension's,
 * case by case. Then hostile metadata: each refused or dropped with a reason, quickly.
 */
import {
  bazaarResourceServerExtension,
  declareDiscoveryExtension,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
} from "@x402/extensions/bazaar";
import { describe, expect, test } from "vitest";
import { BAZAAR_BYTES_LIMIT, type Discovered, discover } from "../src/bazaar/bazaar.js";
import { iconUrlProblem, routeTemplateProblem } from "../src/bazaar/bazaar-metadata.js";
import { validateJsonSchema } from "../src/bazaar/json-schema.js";

const ACCEPTED = {
  scheme: "exact",
  network: "eip155:84532",
  amount: "1000",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  maxTimeoutSeconds: 300,
  extra: { name: "USDC", version: "2" },
};

/** What the official server extension makes of a declaration for one request. */
function enriched(declaration: unknown, method: string, routePattern: string, path: string) {
  const context = { method, routePattern, adapter: { getPath: () => path } };
  return bazaarResourceServerExtension.enrichDeclaration?.(declaration, context) as Record<
    string,
    unknown
  >;
}

const weather = () =>
  enriched(
    declareDiscoveryExtension({
      input: { units: "metric" },
      inputSchema: { properties: { units: { type: "string" } }, required: ["units"] },
      output: { example: { celsius: 24 } },
    }).bazaar,
    "GET",
    "/weather/[city]",
    "/weather/lisbon",
  );
const search = () =>
  enriched(
    declareDiscoveryExtension({
      bodyType: "json",
      input: { query: "x402" },
      inputSchema: { properties: { query: { type: "string", maxLength: 64 } } },
    }).bazaar,
    "POST",
    "/search",
    "/search",
  );
const tool = () =>
  declareDiscoveryExtension({
    toolName: "financial_analysis",
    description: "Deep analysis",
    transport: "sse",
    inputSchema: { type: "object", properties: { ticker: { type: "string" } } },
    example: { ticker: "AAPL" },
  }).bazaar as unknown as Record<string, unknown>;

function payload(resource: Record<string, unknown>, bazaar: unknown, others = {}) {
  return {
    x402Version: 2 as const,
    resource,
    accepted: ACCEPTED,
    payload: {},
    extensions: { bazaar, ...others },
  };
}

/** Ours beside the official extraction, for one payment. */
function both(resource: Record<string, unknown>, bazaar: unknown, others = {}) {
  const p = payload(resource, bazaar, others);
  // The official helper warns on what it refuses; the verdict is what we compare.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the official types are version unions.
    const official = extractDiscoveryInfo(p as any, ACCEPTED as any) as Record<
      string,
      unknown
    > | null;
    return { official, ours: discover(p.resource, p.extensions) };
  } finally {
    console.warn = warn;
  }
}

/** The fields the official extraction and our entry share, in the official names. */
function asOfficial(d: Discovered) {
  return {
    resourceUrl: d.resource,
    description: d.description,
    mimeType: d.mimeType,
    serviceName: d.serviceName,
    tags: d.tags,
    iconUrl: d.iconUrl,
    discoveryInfo: d.bazaar.info,
    ...(d.type === "mcp"
      ? { toolName: d.toolName }
      : { routeTemplate: d.routeTemplate, method: d.method }),
  };
}

function officialFields(o: Record<string, unknown>) {
  const { x402Version: _v, extensions: _e, ...rest } = o;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
}

const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

describe("what we extract is what the official extractDiscoveryInfo extracts", () => {
  const base = {
    url: "https://api.example.com/weather/lisbon?units=metric",
    description: "Weather by city",
    mimeType: "application/json",
  };
  test.each([
    ["a GET route with a path parameter (routeTemplate)", base, weather],
    ["a POST route with a JSON body", { ...base, url: "https://api.example.com/search" }, search],
    [
      "an MCP tool (keyed with its tool name)",
      { ...base, url: "https://api.example.com/mcp" },
      tool,
    ],
    [
      "service metadata kept",
      {
        ...base,
        serviceName: "Example Weather",
        tags: ["weather", "Forecast", "forecast", "maps"],
        iconUrl: "https://cdn.example.com/icon.png",
      },
      weather,
    ],
  ])("%s", (_name, resource, make) => {
    const { official, ours } = both(resource, make());
    expect(official).not.toBeNull();
    expect(ours?.ok, JSON.stringify(ours)).toBe(true);
    if (!ours?.ok || !official) return;
    expect(defined(asOfficial(ours.discovered))).toEqual(officialFields(official));
    expect(ours.notes).toEqual([]);
  });

  test("the catalogue key: origin + routeTemplate, else origin + path; plus the tool for MCP", () => {
    const get = both({ url: "https://api.example.com/weather/paris" }, weather()).ours;
    expect(get?.ok && get.discovered.resource).toBe("https://api.example.com/weather/:city");
    const mcp = both({ url: "https://api.example.com/mcp?session=1" }, tool()).ours;
    expect(mcp?.ok && [mcp.discovered.resource, mcp.discovered.toolName]).toEqual([
      "https://api.example.com/mcp",
      "financial_analysis",
    ]);
  });

  test("only the keys of the payment's other extensions are kept, never their contents", () => {
    const secret = { info: { id: "pay_0123456789abcdef" } };
    const { ours } = both({ url: "https://a.example/x" }, search(), {
      "payment-identifier": secret,
    });
    expect(ours?.ok && ours.discovered.otherExtensions).toEqual(["payment-identifier"]);
    expect(JSON.stringify(ours)).not.toContain("pay_0123456789abcdef");
  });

  test("a payment without the extension has nothing to catalogue", () => {
    expect(discover({ url: "https://a.example/x" }, undefined)).toBeUndefined();
    expect(discover({ url: "https://a.example/x" }, { other: {} })).toBeUndefined();
  });
});

describe("hostile metadata: dropped field by field, as the spec says, and as the official helpers do", () => {
  const url = "https://api.example.com/weather/lisbon";
  test.each([
    [
      "an icon at http://2130706433/ (127.0.0.1, as a decimal)",
      { iconUrl: "http://2130706433/i.png" },
      "iconUrl dropped: it has the IP address 127.0.0.1",
    ],
    [
      "an icon at 0x7f000001",
      { iconUrl: "http://0x7f000001/i.png" },
      "iconUrl dropped: it has the IP address 127.0.0.1",
    ],
    [
      "an icon at 10.0.0.8",
      { iconUrl: "https://10.0.0.8/i.png" },
      "iconUrl dropped: it has the IP address 10.0.0.8",
    ],
    [
      "an icon at [::1]",
      { iconUrl: "http://[::1]/i.png" },
      "iconUrl dropped: it is an IPv6 address",
    ],
    [
      "an icon with a user",
      { iconUrl: "https://u:p@cdn.example.com/i.png" },
      "iconUrl dropped: it must not carry a user",
    ],
    [
      "a data: icon",
      { iconUrl: "data:image/png;base64,AAAA" },
      "iconUrl dropped: it must be http or https",
    ],
    ["a service name of 33 characters", { serviceName: "x".repeat(33) }, "serviceName dropped"],
    [
      "a service name with a newline",
      { serviceName: "Evil\nName" },
      "serviceName dropped: it must be printable ASCII",
    ],
    [
      "a service name that is a number",
      { serviceName: 42 },
      "serviceName dropped: it is not a string",
    ],
    [
      "six tags",
      { tags: ["a1", "b2", "c3", "d4", "e5", "f6"] },
      "tags: 1 past the first 5 dropped",
    ],
    ["tags of wrong types", { tags: ["ok", 7, "", "é"] }, "tags: 3 dropped"],
    ["a description that is not a string", { description: { html: "<b>" } }, "description dropped"],
  ])("%s", (_name, metadata, note) => {
    const { official, ours } = both({ url, ...metadata }, weather());
    expect(ours?.ok).toBe(true);
    if (!ours?.ok) return;
    expect(ours.notes.join("; ")).toContain(note);
    for (const field of ["serviceName", "iconUrl"] as const) {
      if (field in metadata) {
        expect(ours.discovered[field]).toBeUndefined();
        expect(official?.[field]).toBeUndefined();
      }
    }
    if ("tags" in metadata) expect(ours.discovered.tags).toEqual(official?.tags);
  });

  test("`..` in a routeTemplate (plain or percent-encoded): the concrete path keys it, as the official does", () => {
    for (const routeTemplate of ["/users/../admin", "/users/%2e%2e/admin", "/a/%252e%252e/b"]) {
      const bazaar = { ...weather(), routeTemplate };
      const { official, ours } = both({ url }, bazaar);
      expect(ours?.ok && ours.discovered.resource).toBe(official?.resourceUrl);
      expect(ours?.ok && ours.discovered.resource).toBe(url);
      expect(ours?.ok && ours.notes.join()).toContain("routeTemplate dropped");
    }
    expect(routeTemplateProblem("/x/http://evil")).toContain("://");
  });

  test("beyond the spec: private-network host names are no icon hosts either", () => {
    for (const icon of [
      "http://intranet/i.png",
      "https://nas.local/i.png",
      "https://x.internal/i.png",
      "https://a.localhost/i.png",
      // The official helper keeps this one: a trailing dot is not in its loopback set.
      "http://LOCALHOST./i.png",
    ]) {
      expect(iconUrlProblem(icon), icon).toBeDefined();
    }
    expect(iconUrlProblem("https://cdn.example.com/icon.png")).toBeUndefined();
  });
});

describe("hostile extensions: refused whole, with a reason", () => {
  const resource = { url: "https://api.example.com/x" };
  test.each([
    [
      "info that breaks its own schema",
      { ...weather(), info: { input: { type: "http", method: "PUT" } } },
      "info does not match its schema: /input/method",
    ],
    ["no info", { schema: {} }, "must be an object with info"],
    ["info of the wrong type", { info: "GET /x", schema: {} }, "must be an object with info"],
    [
      "a schema that is a string",
      { info: { input: { type: "http" } }, schema: "object" },
      "schema is not usable",
    ],
    [
      "an external $ref",
      { info: { input: { type: "http" } }, schema: { $ref: "https://evil.example/s.json" } },
      "external ones are never fetched",
    ],
    [
      "a $ref loop",
      {
        info: { input: { type: "http" } },
        schema: { $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" },
      },
      "schema is not usable",
    ],
    [
      "an unknown input type",
      { info: { input: { type: "grpc" } }, schema: {} },
      'info.input.type must be "http" or "mcp"',
    ],
    [
      "an MCP tool without a name",
      { info: { input: { type: "mcp", inputSchema: {} } }, schema: {} },
      "info.input.toolName",
    ],
  ])("%s", (_name, bazaar, reason) => {
    const found = discover(resource, { bazaar });
    expect(found?.ok).toBe(false);
    expect(found && !found.ok && found.reason).toContain(reason);
  });

  test("a resource URL that is not http(s) is refused", () => {
    for (const url of ["ftp://a.example/x", "/relative", 42]) {
      const found = discover({ url }, { bazaar: weather() });
      expect(found && !found.ok && found.reason).toContain("resource.url");
    }
  });

  test(`an extension over ${BAZAAR_BYTES_LIMIT} bytes is refused`, () => {
    const big = weather();
    const info = big.info as { input: Record<string, unknown> };
    info.input.queryParams = { units: "x".repeat(BAZAAR_BYTES_LIMIT) };
    const found = discover(resource, { bazaar: big });
    expect(found && !found.ok && found.reason).toMatch(/bytes; at most 16384 are kept/);
  });

  test("a pattern that backtracks without end in JavaScript runs on RE2: its verdict in milliseconds", () => {
    validateJsonSchema({ pattern: "^a$" }, "a"); // loads the engine
    const started = performance.now();
    const bazaar = {
      info: { input: { type: "http", q: `${"a".repeat(40)}!` } },
      schema: {
        properties: { input: { properties: { q: { type: "string", pattern: "^(a+)+$" } } } },
      },
    };
    const found = discover(resource, { bazaar });
    expect(found && !found.ok && found.reason).toContain('must match the pattern "^(a+)+$"');
    expect(performance.now() - started).toBeLessThan(50);
  });

  test("a small schema that doubles its work at each level ($ref twice) stops at the step budget", () => {
    // 24 levels, each checking the one below twice: 16 million checks, in a schema of 50 nodes.
    const $defs: Record<string, unknown> = { l0: {} };
    for (let i = 1; i <= 24; i++) {
      $defs[`l${i}`] = { allOf: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
    }
    const schema = JSON.parse(JSON.stringify({ $defs, $ref: "#/$defs/l24" }));
    const started = performance.now();
    const verdict = validateJsonSchema(schema, { input: { type: "http" } });
    expect(verdict).toMatchObject({ valid: false, unusable: expect.stringContaining("steps") });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("our JSON Schema verdicts are validateDiscoveryExtension's", () => {
  const GET = weather();
  const cases: [string, unknown, unknown][] = [
    ["the official declaration, as enriched", GET.schema, GET.info],
    [
      "a method the schema does not allow",
      GET.schema,
      { ...(GET.info as object), input: { type: "http", method: "POST" } },
    ],
    [
      "a missing required query parameter",
      search().schema,
      { input: { type: "http", method: "POST", bodyType: "json" } },
    ],
    ["an MCP declaration", tool().schema, tool().info],
    [
      "the 2020-12 dialect with a trailing #",
      { $schema: "https://json-schema.org/draft/2020-12/schema#", type: "object" },
      {},
    ],
    [
      "the draft-07 dialect",
      { $schema: "http://json-schema.org/draft-07/schema#", type: "object" },
      {},
    ],
    ["an unknown type name", { type: "foo" }, {}],
    ["required as a string", { required: "a" }, {}],
    ["duplicate required names", { required: ["a", "a"] }, { a: 1 }],
    ["an empty enum", { enum: [] }, 1],
    ["0.3 as a multiple of 0.1 (ajv divides)", { multipleOf: 0.1 }, 0.3],
    ["an unknown format (an annotation)", { type: "string", format: "date-time" }, "not a date"],
    ["a safe pattern, matching", { type: "string", pattern: "^[A-Z]{1,5}$" }, "AAPL"],
    ["a safe pattern, not matching", { type: "string", pattern: "^[A-Z]{1,5}$" }, "aapl"],
    ["lengths in code points", { type: "string", maxLength: 1 }, "😀"],
    ["prefixItems then items: false", { prefixItems: [{ type: "number" }], items: false }, [1, 2]],
    ["contains with minContains", { contains: { const: 2 }, minContains: 2 }, [2, 2, 3]],
    ["oneOf matching twice", { oneOf: [{ type: "number" }, { type: "integer" }] }, 1],
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword.
    ["if/then", { if: { type: "string" }, then: { minLength: 3 } }, "ab"],
    ["dependentRequired", { dependentRequired: { a: ["b"] } }, { a: 1 }],
    ["a minimum that is a string", { minimum: "1" }, 1],
    ["draft 2019 items as an array", { items: [{ type: "string" }] }, [1]],
    ["a boolean false schema", false, {}],
    ["a $ref to nothing", { $ref: "#/nope" }, {}],
    [
      "a $ref into definitions",
      { definitions: { a: { type: "string" } }, $ref: "#/definitions/a" },
      1,
    ],
    ["propertyNames", { propertyNames: { maxLength: 2 } }, { abc: 1 }],
    ["uniqueItems over objects", { uniqueItems: true }, [{ a: 1 }, { a: 1 }]],
    ["a draft-4 boolean exclusiveMinimum", { exclusiveMinimum: true }, 1],
    ["type as a list, with null", { type: ["string", "null"] }, null],
    [
      "patternProperties with additionalProperties: false",
      { patternProperties: { "^x": { type: "number" } }, additionalProperties: false },
      { xa: "s", b: 1 },
    ],
    ["$id of the document itself", { $id: "#", type: "object" }, {}],
    ["an $id anchor", { $id: "#foo", type: "object" }, {}],
  ];
  test.each(cases)("%s", (_name, schema, info) => {
    const warn = console.warn;
    console.warn = () => undefined;
    // biome-ignore lint/suspicious/noExplicitAny: the official helper takes a declared extension.
    const official = validateDiscoveryExtension({ schema, info } as any);
    console.warn = warn;
    expect(validateJsonSchema(schema, info).valid).toBe(official.valid);
  });

  test("where we differ, on purpose: keywords we do not run make the schema unusable", () => {
    for (const schema of [
      { $anchor: "a" },
      { unevaluatedProperties: false },
      { $dynamicAnchor: "a" },
    ]) {
      expect(validateDiscoveryExtension({ schema, info: {} } as never).valid).toBe(true);
      expect(validateJsonSchema(schema, {})).toMatchObject({
        valid: false,
        unusable: expect.any(String),
      });
    }
  });
});
