/** Hash routes of the single-page UI: `#/<page>?<params>` (pure, unit-tested). */
export function parseHashRoute(hash: string): { key: string; params: URLSearchParams } {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const key = (q < 0 ? raw : raw.slice(0, q)).replace(/\/+$/, '');
  return { key, params: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}
