/**
 * Normaliser of the golden-answer suite: turns one HTTP answer into a value that says what a client sees
 * in a form that survives a fresh run (docs/architecture.md, "Golden answers").
 *
 * - **Known ids become labels.** Every id the run created (supysonic's provider ids, random per scan; the
 *   content ids `fp_...`; artist and album ids; anchor and radio ids) is registered with a stable label
 *   (`<server>:<file path>`, `song:<file>`, `artist:<server>:<name>`...). Any string equal to a registered
 *   id, or containing one (messages, paths), has it replaced by `<label>`.
 * - **Volatile values are masked, never dropped.** UUIDs that are not registered (task ids, generation ids)
 *   become `<uuid>`, ISO-8601 times `<time>`, and the values of keys listed in `VOLATILE_KEYS` (durations,
 *   times, byte sizes of caches) become `<volatile:number>` / `<volatile:string>`: the key stays, with its type.
 * - **Encoded values are decoded, not masked.** An `embedding` given as base64 of little-endian float32
 *   (`/api/sync?include_embeddings`) becomes `{ float32_base64: [numbers] }`, so the comparator applies its
 *   numeric tolerance; a paging cursor (`next_page`, `after`: base64url of a canonical id) becomes
 *   `<cursor:...>` around its normalised text.
 */

/** Keys whose value changes per run (times, durations, sizes that depend on timing); their type is kept. */
export const VOLATILE_KEYS: ReadonlySet<string> = new Set([
  'task_id',
  'generation',
  'generation_id',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
  'ended_at',
  'last_seen',
  'last_run',
  'last_run_at',
  'built_at',
  'timestamp',
  'date_added',
  'running_time_seconds',
  'duration_ms',
  'elapsed_ms',
  'took_ms',
  'ms',
]);

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO_TIME = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g;

/** Keys whose string value is an opaque paging cursor (base64url of text). */
export const CURSOR_KEYS: ReadonlySet<string> = new Set(['next_page', 'after']);

/** Decodes base64 of little-endian float32 values, or undefined when `s` is not that. */
function float32Base64(s: string): number[] | undefined {
  if (s.length === 0 || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(s)) return undefined;
  const bytes = Buffer.from(s, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

/** Turns answers into their stable form; ids are registered before the first call is normalised. */
export class Normaliser {
  private readonly labels = new Map<string, string>();
  private readonly idOfLabel = new Map<string, string>();
  private pattern: RegExp | undefined;

  /**
   * Registers `id` (as it appears in answers) under `label`. Ids shorter than 3 characters are refused
   * (they would match inside unrelated text). A second label for the same id, or a second id for the
   * same label, throws: two things would be reported as one (e.g. a transcode given a content id of its
   * own instead of its original's would hide behind the original's `song:<stem>`).
   * @throws Error for a short id or a conflicting label.
   */
  register(id: string, label: string): void {
    if (id.length < 3) throw new Error(`golden: id ${JSON.stringify(id)} is too short to label`);
    const had = this.labels.get(id);
    if (had !== undefined && had !== label) throw new Error(`golden: id ${id} labelled twice (${had}, ${label})`);
    const other = this.idOfLabel.get(label);
    if (other !== undefined && other !== id) throw new Error(`golden: label ${label} given to two ids (${other}, ${id})`);
    this.labels.set(id, label);
    this.idOfLabel.set(label, id);
    this.pattern = undefined;
  }

  /**
   * Normalises a request line `<METHOD> <path>?<query>`: each query value as `normalise(value, key)`
   * (so ids become labels and cursors are decoded), shown unencoded.
   */
  normaliseRequest(method: string, path: string): string {
    const [p, query] = path.split('?', 2) as [string, string | undefined];
    if (query === undefined) return `${method} ${this.normaliseString(p)}`;
    const parts = [...new URLSearchParams(query)].map(([k, v]) => `${k}=${String(this.normalise(v, k))}`);
    return `${method} ${this.normaliseString(p)}?${parts.join('&')}`;
  }

  /** The label of a registered id, or undefined. */
  labelOf(id: string): string | undefined {
    return this.labels.get(id);
  }

  /** Normalises a string: registered ids (longest first) -> `<label>`, then unknown UUIDs and times masked. */
  normaliseString(s: string): string {
    if (this.labels.size > 0) {
      this.pattern ??= new RegExp(
        [...this.labels.keys()]
          .sort((a, b) => b.length - a.length)
          .map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('|'),
        'g',
      );
      s = s.replace(this.pattern, (m) => `<${this.labels.get(m)!}>`);
    }
    return s.replace(UUID, '<uuid>').replace(ISO_TIME, '<time>');
  }

  /**
   * Normalises a JSON value (`key`: the key it sits under): strings as normaliseString; values of
   * VOLATILE_KEYS masked with their type; embeddings and cursors decoded (see the file comment);
   * object keys kept (an id used as a key is relabelled too) and sorted, so fixtures diff line by line.
   */
  normalise(value: unknown, key?: string): unknown {
    if (key !== undefined && VOLATILE_KEYS.has(key) && value !== null && typeof value !== 'object') return `<volatile:${typeof value}>`;
    if (typeof value === 'string' && key === 'embedding') {
      const floats = float32Base64(value);
      if (floats) return { float32_base64: floats };
    }
    if (typeof value === 'string' && key !== undefined && CURSOR_KEYS.has(key)) {
      const text = Buffer.from(value, 'base64url').toString('latin1');
      if (/^[\x20-\x7e]+$/.test(text)) return `<cursor:${this.normaliseString(text)}>`;
    }
    if (typeof value === 'string') return this.normaliseString(value);
    if (Array.isArray(value)) return value.map((v) => this.normalise(v));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value).sort()) {
        const nk = this.normaliseString(k);
        out[nk] = this.normalise((value as Record<string, unknown>)[k], k);
      }
      return out;
    }
    return value;
  }
}
