/** A schema's own shape (what ajv's compile would refuse, what is not run here) and its patterns. */
import { isObject } from "../protocol/words.js";
import { type LinearPattern, linearPattern } from "./json-schema-patterns.js";

export const SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

export type Json = unknown;
export type Schema = boolean | Record<string, Json>;

const TYPES = new Set(["null", "boolean", "object", "array", "number", "string", "integer"]);
const UNSUPPORTED = [
  "$anchor",
  "$dynamicAnchor",
  "$dynamicRef",
  "$recursiveRef",
  "$recursiveAnchor",
  "unevaluatedProperties",
  "unevaluatedItems",
  "$vocabulary",
];
/** Keywords whose value is one subschema / a map of them / a non-empty array of them. */
const ONE = [
  "additionalProperties",
  "propertyNames",
  "items",
  "contains",
  "not",
  "if",
  "then",
  "else",
];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const LIST = ["prefixItems", "allOf", "anyOf", "oneOf"];
const COUNTS = ["Length", "Items", "Properties", "Contains"].flatMap((b) => [`min${b}`, `max${b}`]);
const NUMBERS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];

const isSchema = (v: Json): v is Schema => typeof v === "boolean" || isObject(v);
export const has = (o: Record<string, Json>, k: string) => Object.hasOwn(o, k);

/** Checks the schema's shape and compiles its patterns (charging `spend`): why not, or the patterns. */
export function compile(
  root: Json,
  spend: (steps: number) => void,
): Map<string, LinearPattern> | string {
  if (!isSchema(root)) return "the schema is not an object";
  if (isObject(root) && has(root, "$schema")) {
    const dialect = String(root.$schema).replace(/#$/, "");
    if (dialect !== SCHEMA_DIALECT) return `$schema must be ${SCHEMA_DIALECT}`;
  }
  const patterns = new Map<string, LinearPattern>();
  const stack: [Json, string][] = [[root, "#"]];
  let visited = 0;
  while (stack.length > 0) {
    const [node, where] = stack.pop() as [Json, string];
    if (++visited > 4_096) return "the schema has too many subschemas";
    if (typeof node === "boolean") continue;
    if (!isObject(node)) return `${where} is not a schema (an object or a boolean)`;
    const problem = keywordProblem(node, root, where, patterns, spend);
    if (problem) return problem;
    for (const k of ONE) if (has(node, k)) stack.push([node[k], `${where}/${k}`]);
    for (const k of MAP) {
      for (const [name, sub] of Object.entries(node[k] ?? {})) {
        stack.push([sub, `${where}/${k}/${name}`]);
      }
    }
    for (const k of LIST) {
      (node[k] as Json[] | undefined)?.forEach((sub, i) => {
        stack.push([sub, `${where}/${k}/${i}`]);
      });
    }
  }
  return patterns;
}

function keywordProblem(
  node: Record<string, Json>,
  root: Json,
  where: string,
  patterns: Map<string, LinearPattern>,
  spend: (steps: number) => void,
): string | undefined {
  for (const k of UNSUPPORTED) if (has(node, k)) return `${where}: ${k} is not supported here`;
  for (const k of ["$ref", "$id"]) {
    if (!has(node, k)) continue;
    const v = node[k];
    if (typeof v !== "string" || !v.startsWith("#")) {
      return `${where}: ${k} must be a reference within the schema ("#…"); external ones are never fetched`;
    }
  }
  if (has(node, "$id") && node.$id !== "#") return `${where}: $id anchors are not supported here`;
  if (has(node, "$ref") && resolve(root, node.$ref as string) === undefined) {
    return `${where}: $ref ${JSON.stringify(node.$ref)} points at nothing in the schema`;
  }
  for (const k of ONE)
    if (has(node, k) && !isSchema(node[k])) return `${where}/${k} is not a schema`;
  for (const k of MAP) {
    if (has(node, k) && (!isObject(node[k]) || !Object.values(node[k]).every(isSchema))) {
      return `${where}/${k} must map names to schemas`;
    }
  }
  for (const k of LIST) {
    const v = node[k];
    if (has(node, k) && (!Array.isArray(v) || v.length === 0 || !v.every(isSchema))) {
      return `${where}/${k} must be a non-empty array of schemas`;
    }
  }
  for (const k of COUNTS) {
    const v = node[k];
    if (has(node, k) && !(typeof v === "number" && Number.isInteger(v) && v >= 0)) {
      return `${where}/${k} must be a non-negative integer`;
    }
  }
  for (const k of NUMBERS) {
    if (has(node, k) && typeof node[k] !== "number") return `${where}/${k} must be a number`;
  }
  if (has(node, "multipleOf") && !((node.multipleOf as number) > 0)) {
    return `${where}/multipleOf must be a number above 0`;
  }
  if (has(node, "type")) {
    const t = node.type;
    const list = Array.isArray(t) ? t : [t];
    if (
      list.length === 0 ||
      !list.every((x) => typeof x === "string" && TYPES.has(x)) ||
      new Set(list).size !== list.length
    ) {
      return `${where}/type must name JSON types (${[...TYPES].join(", ")})`;
    }
  }
  if (has(node, "enum") && !(Array.isArray(node.enum) && node.enum.length > 0)) {
    return `${where}/enum must be a non-empty array`;
  }
  if (has(node, "uniqueItems") && typeof node.uniqueItems !== "boolean") {
    return `${where}/uniqueItems must be a boolean`;
  }
  if (has(node, "required") && !uniqueStrings(node.required)) {
    return `${where}/required must be an array of distinct strings`;
  }
  if (has(node, "dependentRequired")) {
    const v = node.dependentRequired;
    if (!isObject(v) || !Object.values(v).every(uniqueStrings)) {
      return `${where}/dependentRequired must map names to arrays of distinct strings`;
    }
  }
  const sources = [
    ...(has(node, "pattern") ? [node.pattern] : []),
    ...Object.keys(isObject(node.patternProperties) ? node.patternProperties : {}),
  ];
  for (const source of sources) {
    if (typeof source !== "string") return `${where}/pattern must be a string`;
    if (patterns.has(source)) continue;
    const compiled = linearPattern(source, spend);
    if (typeof compiled === "string") {
      return `${where}: pattern ${JSON.stringify(source.slice(0, 60))} ${compiled}`;
    }
    patterns.set(source, compiled);
  }
  return undefined;
}

const uniqueStrings = (v: Json) =>
  Array.isArray(v) && v.every((x) => typeof x === "string") && new Set(v).size === v.length;

/** The subschema a same-document `$ref` names (a JSON Pointer), if there is one. */
export function resolve(root: Json, ref: string): Schema | undefined {
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer !== "" && !pointer.startsWith("/")) return undefined;
  let node: Json = root;
  for (const raw of pointer === "" ? [] : pointer.slice(1).split("/")) {
    const part = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(part)) node = node[Number(part)];
    else if (isObject(node) && has(node, part)) node = node[part];
    else return undefined;
  }
  return isSchema(node) ? node : undefined;
}
