/** A sort: `"-createdAt,title"`, `["-createdAt", "title"]` or `{ createdAt: -1, title: 1 }`. */
export type SortSpec = string | string[] | Record<string, 1 | -1>;

/** The value at a dotted path. */
function at(doc: unknown, path: string): unknown {
  let value = doc;
  for (const key of path.split('.')) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}

/** The rank of a value's type, in the store's order: missing and null, numbers, strings, objects, arrays, booleans. */
function rank(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return 1;
  if (typeof v === 'string') return 2;
  if (Array.isArray(v)) return 4;
  if (typeof v === 'object') return 3;
  return 5;
}

/** Compares two JSON values the way the store sorts them. */
export function compare(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1 || ra === 5) return Number(a) - Number(b);
  if (ra === 2) return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
  if (ra === 0) return 0;
  const x = ra === 4 ? (a as unknown[]) : Object.entries(a as object).flat();
  const y = ra === 4 ? (b as unknown[]) : Object.entries(b as object).flat();
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = compare(x[i], y[i]);
    if (c) return c;
  }
  return x.length - y.length;
}

/** The comparator of a sort (ties broken by `_id`, so the order is stable). */
export function comparator(spec: SortSpec): (a: object, b: object) => number {
  const keys: [string, number][] =
    typeof spec === 'object' && !Array.isArray(spec)
      ? Object.entries(spec)
      : (typeof spec === 'string' ? spec.split(',') : spec)
          .map((k) => k.trim())
          .filter(Boolean)
          .map((k) => (k.startsWith('-') ? [k.slice(1), -1] : [k.replace(/^\+/, ''), 1]));
  return (a, b) => {
    for (const [key, dir] of keys) {
      const c = compare(at(a, key), at(b, key));
      if (c) return c * dir;
    }
    return compare(at(a, '_id'), at(b, '_id'));
  };
}

/** Deep equality of two JSON values. */
export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
