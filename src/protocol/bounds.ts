/** Bounds on free-form request fields after JSON.parse: `[0,0,…]` bodies exhausted the heap. */

import { isObject } from "./words.js";

/** Most JSON values one field may hold, counting the field itself and everything inside it. */
export const FIELD_VALUE_LIMIT = 512;
/** Deepest nesting inside one field: `{"a":{"b":1}}` is 2 levels. */
export const FIELD_DEPTH_LIMIT = 32;
/** Most JSON values in the whole body (a payment has about 40). */
export const BODY_VALUE_LIMIT = 2048;

export interface BoundExceeded {
  /** The field the limit was passed in, as the caller named it ("requirements.extra"). */
  readonly field: string;
  readonly message: string;
}

/** Checks `body`'s keys, and those of the objects named in `containers`, against the limits. */
export function exceedsBounds(
  body: Record<string, unknown>,
  containers: readonly string[],
): BoundExceeded | undefined {
  let total = 0;
  const check = (field: string, content: unknown): BoundExceeded | undefined => {
    const counted = countValues(content);
    total += counted.values;
    const message = counted.tooDeep
      ? `${field} is nested more than ${FIELD_DEPTH_LIMIT} levels deep (the limit for one field)`
      : counted.values > FIELD_VALUE_LIMIT
        ? `${field} holds more than ${FIELD_VALUE_LIMIT} JSON values (the limit for one field)`
        : total > BODY_VALUE_LIMIT
          ? `the body holds more than ${BODY_VALUE_LIMIT} JSON values (the limit); passed in ${field}`
          : undefined;
    return message ? { field, message } : undefined;
  };
  for (const key in body) {
    const value = body[key];
    if (containers.includes(key) && isObject(value)) {
      total += 1;
      for (const inner in value) {
        const exceeded = check(`${key}.${inner}`, value[inner]);
        if (exceeded) return exceeded;
      }
    } else {
      const exceeded = check(key, value);
      if (exceeded) return exceeded;
    }
  }
  return undefined;
}

/** Values in `root` (itself included), up to one past the field limit; stops early when deep. */
function countValues(root: unknown): { values: number; tooDeep: boolean } {
  let values = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    values += 1;
    if (values > FIELD_VALUE_LIMIT) return { values, tooDeep: false };
    if (typeof value !== "object" || value === null) continue;
    if (depth > FIELD_DEPTH_LIMIT) return { values, tooDeep: true };
    if (Array.isArray(value)) {
      // Pushing is bounded too: past the limit, the count above stops the walk.
      const end = Math.min(value.length, FIELD_VALUE_LIMIT + 1);
      for (let i = 0; i < end; i++) stack.push([value[i], depth + 1]);
      if (value.length > FIELD_VALUE_LIMIT)
        return { values: values + value.length, tooDeep: false };
    } else {
      let pushed = 0;
      for (const key in value) {
        stack.push([(value as Record<string, unknown>)[key], depth + 1]);
        if (++pushed > FIELD_VALUE_LIMIT) return { values: values + pushed, tooDeep: false };
      }
    }
  }
  return { values, tooDeep: false };
}
