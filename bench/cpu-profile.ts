/**
 * Reading a V8 `.cpuprofile` (node --cpu-prof) of our unminified bundle: each sample's CPU time is
 * given to the source file it was spent for. esbuild writes `// src/http/handler.ts` above each
 * module it bundles, so a line of the bundle names its source. A sample is given to the innermost
 * frame on its stack that is ours (src/) or node's own (`node:…`, its HTTP server and sockets), so
 * time in a library or a builtin counts for the code that called it; a stack with neither is
 * named by its leaf (the garbage collector, a native call made from the event loop).
 */
import { readFileSync } from "node:fs";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  /** 0-based. */
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  /** µs since the previous sample. */
  readonly timeDeltas: readonly number[];
}

/** Where the time went: CPU ms per source (src/… file, or a named leaf), idle left out. */
export interface Attribution {
  readonly bySource: Map<string, number>;
  /** "file:function" of the innermost frame of ours, for the detail list. */
  readonly byFunction: Map<string, number>;
  readonly totalMs: number;
}

/** The `// path` markers of one bundled file: sorted first lines and their sources. */
function moduleMarkers(text: string): { lines: number[]; sources: string[] } {
  const lines: number[] = [];
  const sources: string[] = [];
  const all = text.split("\n");
  for (let i = 0; i < all.length; i++) {
    const match = /^\/\/ ((?:src|node_modules)\/\S+\.[cm]?[jt]s)$/.exec(all[i] as string);
    if (match?.[1]) {
      lines.push(i);
      sources.push(match[1]);
    }
  }
  return { lines, sources };
}

function sourceAt(markers: { lines: number[]; sources: string[] }, line: number): string {
  let lo = 0;
  let hi = markers.lines.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((markers.lines[mid] as number) <= line) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 ? "(bundle prelude)" : (markers.sources[found] as string);
}

/** A frame's source: `src/…`, `node_modules/<package>`, `node:…`, or V8's `(name)`. */
function frameSource(
  frame: CallFrame,
  markersOf: (url: string) => ReturnType<typeof moduleMarkers> | undefined,
): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith("(") ? functionName : `(native ${functionName || "?"})`;
  if (url.startsWith("node:")) return url;
  const markers = markersOf(url);
  if (markers) {
    const source = sourceAt(markers, frame.lineNumber);
    const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
    return pkg ? `node_modules/${pkg[1]}` : source;
  }
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return pkg ? `node_modules/${pkg[1]}` : url;
}

/**
 * Attributes a profile's samples. `keepFrom` drops samples before the first one whose stack has a
 * frame of this source (start-up is not what is measured).
 */
export function attribute(
  profile: CpuProfile,
  keepFrom?: string,
  /** Sources of ours that count for their caller, as a library's do (a hash, a byte writer). */
  helper: (source: string) => boolean = () => false,
): Attribution {
  const markerCache = new Map<string, ReturnType<typeof moduleMarkers> | undefined>();
  const markersOf = (url: string) => {
    if (!markerCache.has(url)) {
      let markers: ReturnType<typeof moduleMarkers> | undefined;
      try {
        const file = url.startsWith("file://") ? new URL(url) : url;
        const text = readFileSync(file, "utf8");
        markers = /\/\/ src\//.test(text) ? moduleMarkers(text) : undefined;
      } catch {
        markers = undefined;
      }
      markerCache.set(url, markers);
    }
    return markerCache.get(url);
  };
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  // Per node: the source and function the sample is given to (memoised; stacks share prefixes).
  const owner = new Map<number, { source: string; fn: string; hasKeep: boolean }>();
  const ownerOf = (id: number): { source: string; fn: string; hasKeep: boolean } => {
    const known = owner.get(id);
    if (known) return known;
    const leaf = byId.get(id) as ProfileNode;
    let ours: { source: string; fn: string } | undefined;
    let hasKeep = false;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = (byId.get(at) as ProfileNode).callFrame;
      const source = frameSource(frame, markersOf);
      const owns = (source.startsWith("src/") && !helper(source)) || source.startsWith("node:");
      if (!ours && owns) ours = { source, fn: frame.functionName || "(anonymous)" };
      if (keepFrom && source === keepFrom) hasKeep = true;
    }
    const result = ours
      ? { ...ours, hasKeep }
      : {
          source: frameSource(leaf.callFrame, markersOf),
          fn: leaf.callFrame.functionName,
          hasKeep,
        };
    owner.set(id, result);
    return result;
  };
  const bySource = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let totalMs = 0;
  let keeping = keepFrom === undefined;
  const add = (map: Map<string, number>, key: string, ms: number) =>
    map.set(key, (map.get(key) ?? 0) + ms);
  for (let i = 0; i < profile.samples.length; i++) {
    const who = ownerOf(profile.samples[i] as number);
    if (!keeping && who.hasKeep) keeping = true;
    if (!keeping || who.source === "(idle)") continue;
    // A sample's delta is the time before it; the next sample's delta is this one's duration.
    const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    totalMs += ms;
    add(bySource, who.source, ms);
    add(byFunction, `${who.source}:${who.fn}`, ms);
  }
  return { bySource, byFunction, totalMs };
}

/** The steps of a request, each a set of sources; the first step whose test matches takes it. */
export interface Step {
  readonly name: string;
  /** Given "source:function" of a sample's innermost frame of ours. */
  readonly matches: (where: string) => boolean;
}

export function byStep(attribution: Attribution, steps: readonly Step[]): Map<string, number> {
  const shares = new Map<string, number>(steps.map((s) => [s.name, 0]));
  for (const [where, ms] of attribution.byFunction) {
    const step = steps.find((s) => s.matches(where));
    const name = step?.name ?? "other";
    shares.set(name, (shares.get(name) ?? 0) + ms);
  }
  return shares;
}
