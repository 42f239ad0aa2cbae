/** JSON Schema 2020-12 for untrusted input: nothing fetched, one step budget stops `$ref` loops
 * and costly patterns. Not ajv: it compiles and keeps code per schema (per payment), no budget. */
import { isObject } from "../protocol/words.js";
import { type LinearPattern, PATTERN_INPUT_LIMIT, searches } from "./json-schema-patterns.js";
import { compile, has, type Json, resolve, type Schema } from "./json-schema-shape.js";

/** Steps one validation may take (tens of ms); a step is one RE2 instruction on one character. */
export const SCHEMA_STEP_LIMIT = 1_000_000;
/** Steps per (subschema, value) pair visited: 10,000 of them at most. */
const VISIT_COST = 100;
/** Most nested subschemas one validation may be inside at once (through `$ref` included). */
const DEPTH_LIMIT = 64;
/** Errors reported, at most. */
const ERRORS_KEPT = 5;

export type SchemaVerdict =
  | { readonly valid: true }
  | { readonly valid: false; readonly errors: readonly string[] }
  /** The schema itself cannot be used: not JSON Schema, or beyond what is checked here. */
  | { readonly valid: false; readonly unusable: string };

/** Validates `value` against `schema`. */
export function validateJsonSchema(schema: Json, value: Json): SchemaVerdict {
  const errors: string[] = [];
  let steps = 0;
  const spend = (cost: number) => {
    steps += cost;
    if (steps > SCHEMA_STEP_LIMIT) {
      throw new Exhausted(`checking the schema takes more than ${SCHEMA_STEP_LIMIT} steps`);
    }
  };
  try {
    const compiled = compile(schema, spend);
    if (typeof compiled === "string") return { valid: false, unusable: compiled };
    new Run(schema as Schema, compiled, spend).check(schema as Schema, value, "", 0, errors);
  } catch (error) {
    if (error instanceof Exhausted) return { valid: false, unusable: error.message };
    throw error;
  }
  return errors.length === 0 ? { valid: true } : { valid: false, errors };
}

class Exhausted extends Error {}

function jsonType(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function equal(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && equal(a[k], b[k]))
    );
  }
  return false;
}

/** minLength/maxLength, minItems/maxItems, minProperties/maxProperties: `size` within them. */
function sized(
  s: Record<string, Json>,
  bound: "Length" | "Items" | "Properties",
  size: number,
  fail: (m: string) => boolean,
): boolean {
  const [min, max] = [s[`min${bound}`], s[`max${bound}`]];
  const unit = bound === "Length" ? "characters" : bound.toLowerCase();
  if (typeof min === "number" && size < min) return fail(`must have at least ${min} ${unit}`);
  if (typeof max === "number" && size > max) return fail(`must have at most ${max} ${unit}`);
  return true;
}

const show = (v: Json) => {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
};

/** One (subschema, value) visit: where it is, how it fails, how it descends. */
interface Visit {
  readonly path: string;
  fail(message: string): boolean;
  sub(next: Schema, v: Json, p?: string): boolean;
  /** For a verdict only (anyOf, oneOf, not, if, contains): its errors kept apart. */
  quiet(next: Schema, v: Json): boolean;
}

class Run {
  constructor(
    readonly root: Schema,
    readonly patterns: Map<string, LinearPattern>,
    readonly spend: (steps: number) => void,
  ) {}

  /** Whether `value` is valid; failures are added to `errors` (up to ERRORS_KEPT). */
  check(schema: Schema, value: Json, path: string, depth: number, errors: string[]): boolean {
    this.spend(VISIT_COST);
    if (depth > DEPTH_LIMIT) throw new Exhausted(`the schema nests more than ${DEPTH_LIMIT} deep`);
    const fail = (message: string) => {
      // Paths are the value's own keys: a long one is cut, so a reason stays a line.
      const where = path.length > 80 ? `${path.slice(0, 80)}…` : path || "(root)";
      if (errors.length < ERRORS_KEPT) errors.push(`${where}: ${message}`);
      return false;
    };
    if (schema === true) return true;
    if (schema === false) return fail("no value is allowed here");
    const s = schema;
    let ok = true;
    const sub = (next: Schema, v: Json, p = path) => this.check(next, v, p, depth + 1, errors);
    const quiet = (next: Schema, v: Json) => this.check(next, v, path, depth + 1, []);
    const at: Visit = { path, fail, sub, quiet };

    if (typeof s.$ref === "string") {
      ok = sub(resolve(this.root, s.$ref) as Schema, value) && ok;
    }
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
      const actual = jsonType(value);
      const fits = types.some(
        (t) =>
          t === actual || (t === "integer" && typeof value === "number" && Number.isInteger(value)),
      );
      if (!fits) return fail(`must be ${types.join(" or ")}`);
    }
    if (has(s, "const") && !equal(s.const, value)) ok = fail(`must be ${show(s.const)}`);
    if (Array.isArray(s.enum) && !s.enum.some((e) => equal(e, value))) {
      ok = fail(`must be one of ${s.enum.map(show).join(", ")}`);
    }
    if (typeof value === "string") ok = this.#string(s, value, at) && ok;
    if (typeof value === "number") ok = this.#number(s, value, at) && ok;
    if (Array.isArray(value)) ok = this.#array(s, value, at) && ok;
    if (isObject(value)) ok = this.#object(s, value, at) && ok;

    for (const next of (s.allOf as Schema[] | undefined) ?? []) ok = sub(next, value) && ok;
    if (Array.isArray(s.anyOf) && !(s.anyOf as Schema[]).some((next) => quiet(next, value))) {
      ok = fail("must match a schema in anyOf");
    }
    if (Array.isArray(s.oneOf)) {
      const matched = (s.oneOf as Schema[]).filter((next) => quiet(next, value)).length;
      if (matched !== 1) ok = fail(`must match exactly one schema in oneOf (matched ${matched})`);
    }
    if (has(s, "not") && quiet(s.not as Schema, value))
      ok = fail("must not match the schema in not");
    if (has(s, "if")) {
      const branch = quiet(s.if as Schema, value) ? s.then : s.else;
      if (branch !== undefined) ok = sub(branch as Schema, value) && ok;
    }
    return ok;
  }

  #string(s: Record<string, Json>, value: string, { fail }: Visit): boolean {
    // Lengths in code points, as JSON Schema (and ajv) count them.
    let ok = sized(s, "Length", [...value].length, fail);
    if (typeof s.pattern === "string") {
      if (!this.#matches(s.pattern, value)) ok = fail(`must match the pattern ${show(s.pattern)}`);
    }
    return ok;
  }

  #matches(source: string, value: string): boolean {
    if (value.length > PATTERN_INPUT_LIMIT) {
      throw new Exhausted(
        `a string of more than ${PATTERN_INPUT_LIMIT} characters is not run through pattern ${show(source)}`,
      );
    }
    const pattern = this.patterns.get(source) as LinearPattern;
    this.spend(pattern.cost * (value.length + 1));
    return searches(pattern, value);
  }

  #number(s: Record<string, Json>, value: number, { fail }: Visit): boolean {
    let ok = true;
    const bound = (k: string, broken: (limit: number) => boolean, words: string) => {
      const limit = s[k];
      if (typeof limit === "number" && broken(limit)) ok = fail(`must be ${words} ${limit}`);
    };
    bound("minimum", (l) => value < l, ">=");
    bound("maximum", (l) => value > l, "<=");
    bound("exclusiveMinimum", (l) => value <= l, ">");
    bound("exclusiveMaximum", (l) => value >= l, "<");
    // As ajv divides (no precision option): 0.3 is not a multiple of 0.1 there either.
    if (typeof s.multipleOf === "number" && (value / s.multipleOf) % 1 !== 0) {
      ok = fail(`must be a multiple of ${s.multipleOf}`);
    }
    return ok;
  }

  #array(s: Record<string, Json>, value: Json[], { path, fail, sub, quiet }: Visit): boolean {
    let ok = sized(s, "Items", value.length, fail);
    if (s.uniqueItems === true) {
      const same = value.findIndex((x, i) => value.slice(0, i).some((y) => equal(x, y)));
      if (same >= 0) ok = fail(`must not have duplicate items (item ${same} is repeated)`);
    }
    const prefix = (s.prefixItems as Schema[] | undefined) ?? [];
    value.forEach((item, i) => {
      const next = i < prefix.length ? prefix[i] : (s.items as Schema | undefined);
      if (next !== undefined) ok = sub(next, item, `${path}/${i}`) && ok;
    });
    if (has(s, "contains")) {
      const found = value.filter((item) => quiet(s.contains as Schema, item)).length;
      const min = typeof s.minContains === "number" ? s.minContains : 1;
      if (found < min) ok = fail(`must contain at least ${min} matching items`);
      if (typeof s.maxContains === "number" && found > s.maxContains) {
        ok = fail(`must contain at most ${s.maxContains} matching items`);
      }
    }
    return ok;
  }

  #object(s: Record<string, Json>, value: Record<string, Json>, { path, fail, sub }: Visit) {
    const keys = Object.keys(value);
    let ok = sized(s, "Properties", keys.length, fail);
    for (const name of (s.required as string[] | undefined) ?? []) {
      if (!has(value, name)) ok = fail(`must have the property ${show(name)}`);
    }
    const dependentRequired = (s.dependentRequired as Record<string, string[]>) ?? {};
    for (const [name, needed] of Object.entries(dependentRequired)) {
      if (!has(value, name)) continue;
      for (const other of needed) {
        if (!has(value, other)) ok = fail(`must have ${show(other)} when it has ${show(name)}`);
      }
    }
    const dependentSchemas = (s.dependentSchemas as Record<string, Schema>) ?? {};
    for (const [name, next] of Object.entries(dependentSchemas)) {
      if (has(value, name)) ok = sub(next, value) && ok;
    }
    const properties = (s.properties as Record<string, Schema> | undefined) ?? {};
    const patterned = Object.entries((s.patternProperties as Record<string, Schema>) ?? {});
    for (const key of keys) {
      const at = `${path}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
      if (s.propertyNames !== undefined) {
        ok = sub(s.propertyNames as Schema, key, at) && ok;
      }
      let known = false;
      if (has(properties, key)) {
        known = true;
        ok = sub(properties[key] as Schema, value[key], at) && ok;
      }
      for (const [source, next] of patterned) {
        if (this.#matches(source, key)) {
          known = true;
          ok = sub(next, value[key], at) && ok;
        }
      }
      if (!known && s.additionalProperties !== undefined) {
        if (s.additionalProperties === false) ok = fail(`must not have the property ${show(key)}`);
        else ok = sub(s.additionalProperties as Schema, value[key], at) && ok;
      }
    }
    return ok;
  }
}
