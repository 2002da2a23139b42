import { safeParseValue, z } from '@polyphony/contracts';
import type { ToolSpec } from '@polyphony/llm';
import { formatZodError } from '@polyphony/platform';
import type { AlchemyService } from '../alchemy/alchemy.service';
import type { ArtistService } from '../artists/artist.service';
import type { RequestScope } from '../core/scope';
import type { SearchService } from '../similarity/search.service';
import type { SimilarityService } from '../similarity/similarity.service';

/** A song a tool found, in the selected server's ids. */
export interface ChatSong {
  item_id: string;
  title: string | null;
  author: string | null;
  album: string | null;
}

/** Descriptor filters (units: BPM for tempo; energy as a 0-1 rank within the catalogue; years inclusive). */
export interface DescriptorFilter {
  yearMin?: number;
  yearMax?: number;
  tempoMin?: number;
  tempoMax?: number;
  /** 0-1: fraction of the catalogue with lower energy (so 0.66 = the loudest third). */
  energyRankMin?: number;
  energyRankMax?: number;
  key?: string;
  scale?: 'major' | 'minor';
}

/** Catalogue queries the chat tools need beyond the feature services (store: chat.store.ts). */
export interface ChatCatalogPort {
  /** Canonical ids matching the filters (and, when given, the artist), deterministic order, at most `limit`. */
  filter(f: DescriptorFilter & { artist?: string }, limit: number): Promise<string[]>;
  /** Which of these folded names are artists of the catalogue (folded name -> display name). */
  artistsNamed(folded: string[]): Promise<Map<string, string>>;
}

/** Free-text / mood search (CLAP-class scorer) when the text-search feature is available. */
export interface ChatTextSearchPort {
  search(scope: RequestScope, query: string, limit: number): Promise<ChatSong[]>;
}

export interface ChatToolDeps {
  similarity: SimilarityService;
  search: SearchService;
  alchemy: AlchemyService;
  artists: ArtistService;
  catalog: ChatCatalogPort;
  text?: ChatTextSearchPort;
}

const n = z.coerce.number().int().min(1).max(100).optional();
const title = z.string().trim().min(1).max(300);
const name = z.string().trim().min(1).max(300);

/** Each tool: JSON Schema for the model, zod for validating what the model sent, and the executor. */
interface ToolDef<T> {
  spec: ToolSpec;
  args: z.ZodType<T, z.ZodTypeDef, unknown>;
  run(scope: RequestScope, args: T, deps: ChatToolDeps): Promise<ChatSong[]>;
}

const FilterArgs = z
  .object({
    title: z.string().trim().max(300).optional(),
    artist: z.string().trim().max(300).optional(),
    album: z.string().trim().max(300).optional(),
    year_min: z.coerce.number().int().min(1000).max(3000).optional(),
    year_max: z.coerce.number().int().min(1000).max(3000).optional(),
    tempo_min: z.coerce.number().min(20).max(300).optional(),
    tempo_max: z.coerce.number().min(20).max(300).optional(),
    energy: z.enum(['low', 'medium', 'high']).optional(),
    key: z.string().trim().regex(/^[A-G][#b]?$/).optional(),
    scale: z.enum(['major', 'minor']).optional(),
    limit: n,
  })
  .strict();

const ENERGY_RANKS: Record<'low' | 'medium' | 'high', [number, number]> = { low: [0, 1 / 3], medium: [1 / 3, 2 / 3], high: [2 / 3, 1] };

/** The tools offered to the model (and used by the rule-based interpreter). */
export const CHAT_TOOLS = {
  search_database: {
    spec: {
      name: 'search_database',
      description: 'Find songs by metadata and audio descriptors: title/artist/album words, year range, tempo range (BPM), energy (low|medium|high within this library), key and scale. All fields optional.',
      parameters: {
        type: 'object',
        properties: {
          title: { type: 'string' },
          artist: { type: 'string' },
          album: { type: 'string' },
          year_min: { type: 'integer' },
          year_max: { type: 'integer' },
          tempo_min: { type: 'number', description: 'BPM' },
          tempo_max: { type: 'number', description: 'BPM' },
          energy: { type: 'string', enum: ['low', 'medium', 'high'] },
          key: { type: 'string', description: 'C, C#, Db, ... B' },
          scale: { type: 'string', enum: ['major', 'minor'] },
          limit: { type: 'integer' },
        },
      },
    },
    args: FilterArgs,
    async run(scope, a, d) {
      const limit = a.limit ?? 25;
      const words = [a.title, a.artist, a.album].filter(Boolean).join(' ');
      const hasFilter = a.year_min !== undefined || a.year_max !== undefined || a.tempo_min !== undefined || a.tempo_max !== undefined || a.energy !== undefined || a.key !== undefined || a.scale !== undefined;
      if (words && !hasFilter) return (await d.search.search(scope, { search_query: words, start: 0, limit })).map(song);
      const [eMin, eMax] = a.energy ? ENERGY_RANKS[a.energy] : [undefined, undefined];
      const ids = await d.catalog.filter({ yearMin: a.year_min, yearMax: a.year_max, tempoMin: a.tempo_min, tempoMax: a.tempo_max, energyRankMin: eMin, energyRankMax: eMax, key: a.key, scale: a.scale, artist: a.artist }, Math.max(limit * 20, 200));
      return presentIds(scope, ids, limit);
    },
  } satisfies ToolDef<z.infer<typeof FilterArgs>>,

  song_similarity: {
    spec: {
      name: 'song_similarity',
      description: 'Songs that sound like one song of the library, named by title (and artist when known).',
      parameters: { type: 'object', properties: { title: { type: 'string' }, artist: { type: 'string' }, n: { type: 'integer' } }, required: ['title'] },
    },
    args: z.object({ title, artist: z.string().trim().max(300).optional(), n }).strict(),
    async run(scope, a, d) {
      const seed = await findSong(scope, d, a.title, a.artist);
      if (!seed) return [];
      const rows = await d.similarity.similarTracks(scope, { itemId: seed.item_id }, { n: a.n ?? 20, eliminateDuplicates: true, maxPerArtist: 0 });
      return [seed, ...rows.map(song)];
    },
  } satisfies ToolDef<{ title: string; artist?: string; n?: number }>,

  artist_similarity: {
    spec: {
      name: 'artist_similarity',
      description: 'Songs by the named artist and by the artists that sound most like them.',
      parameters: { type: 'object', properties: { artist: { type: 'string' }, n: { type: 'integer' } }, required: ['artist'] },
    },
    args: z.object({ artist: name, n }).strict(),
    async run(scope, a, d) {
      const limit = a.n ?? 25;
      const own = await presentIds(scope, await d.catalog.filter({ artist: a.artist }, 200), Math.ceil(limit / 2));
      let similar: string[] = [];
      try {
        similar = (await d.artists.similarArtists(scope, { artist: a.artist }, 5, false)).map((s) => s.artist).filter((x): x is string => Boolean(x));
      } catch {
        similar = [];
      }
      const out = [...own];
      for (const artist of similar) out.push(...(await presentIds(scope, await d.catalog.filter({ artist }, 50), 5)));
      return out;
    },
  } satisfies ToolDef<{ artist: string; n?: number }>,

  song_alchemy: {
    spec: {
      name: 'song_alchemy',
      description: 'Blend songs: results near the mean of the added songs and away from the subtracted ones. Songs named by title.',
      parameters: {
        type: 'object',
        properties: { add: { type: 'array', items: { type: 'string' }, description: 'titles to add' }, subtract: { type: 'array', items: { type: 'string' }, description: 'titles to move away from' }, n: { type: 'integer' } },
        required: ['add'],
      },
    },
    args: z.object({ add: z.array(title).min(1).max(10), subtract: z.array(title).max(10).optional(), n }).strict(),
    async run(scope, a, d) {
      const items: Array<{ id: string; op: 'ADD' | 'SUBTRACT'; type: 'song' }> = [];
      for (const t of a.add) {
        const s = await findSong(scope, d, t);
        if (s) items.push({ id: s.item_id, op: 'ADD', type: 'song' });
      }
      if (!items.length) return [];
      for (const t of a.subtract ?? []) {
        const s = await findSong(scope, d, t);
        if (s) items.push({ id: s.item_id, op: 'SUBTRACT', type: 'song' });
      }
      const out = await d.alchemy.run(scope, items, { n: a.n ?? 25, temperature: 0, subtractDistance: 0.2 });
      return (out.results as Array<{ item_id: string; title: string | null; author: string | null; album?: string | null }>).map(song);
    },
  } satisfies ToolDef<{ add: string[]; subtract?: string[]; n?: number }>,

  song_path: {
    spec: {
      name: 'song_path',
      description: 'A smooth journey from one song to another (titles), passing through songs in between.',
      parameters: { type: 'object', properties: { start_title: { type: 'string' }, end_title: { type: 'string' }, steps: { type: 'integer' } }, required: ['start_title', 'end_title'] },
    },
    args: z.object({ start_title: title, end_title: title, steps: z.coerce.number().int().min(2).max(50).optional() }).strict(),
    async run(scope, a, d) {
      const [start, end] = [await findSong(scope, d, a.start_title), await findSong(scope, d, a.end_title)];
      if (!start || !end) return [];
      const path = await d.similarity.findPath(scope, start.item_id, end.item_id, a.steps ?? 12);
      return (path.path as Array<{ item_id: string; title: string | null; author: string | null; album?: string | null }>).map(song);
    },
  } satisfies ToolDef<{ start_title: string; end_title: string; steps?: number }>,

  text_search: {
    spec: {
      name: 'text_search',
      description: 'Songs matching a free-text description of sound or mood (e.g. "calm piano", "aggressive guitars").',
      parameters: { type: 'object', properties: { query: { type: 'string' }, n: { type: 'integer' } }, required: ['query'] },
    },
    args: z.object({ query: z.string().trim().min(3).max(300), n }).strict(),
    async run(scope, a, d) {
      return d.text ? d.text.search(scope, a.query, a.n ?? 25) : [];
    },
  } satisfies ToolDef<{ query: string; n?: number }>,
} as const;

export type ChatToolName = keyof typeof CHAT_TOOLS;

/** Tool specs to offer the model (text search only when the feature is available). */
export function offeredTools(deps: ChatToolDeps): ToolSpec[] {
  return (Object.keys(CHAT_TOOLS) as ChatToolName[]).filter((k) => k !== 'text_search' || deps.text).map((k) => CHAT_TOOLS[k].spec);
}

/** Outcome of validating a model's tool call. */
export type ValidatedCall = { ok: true; tool: ChatToolName; args: unknown } | { ok: false; error: string };

/**
 * Validates a tool call the model produced (untrusted): the tool must exist and be offered, the
 * arguments must be a JSON object passing the tool's schema (unknown fields refused).
 */
export function validateToolCall(nameRaw: string, argsRaw: string, deps: ChatToolDeps): ValidatedCall {
  const toolName = nameRaw as ChatToolName;
  if (!Object.prototype.hasOwnProperty.call(CHAT_TOOLS, nameRaw) || (toolName === 'text_search' && !deps.text)) return { ok: false, error: `unknown tool "${nameRaw.slice(0, 60)}"` };
  let parsed: unknown;
  try {
    parsed = argsRaw.trim() ? JSON.parse(argsRaw) : {};
  } catch {
    return { ok: false, error: `arguments of ${toolName} are not valid JSON` };
  }
  const r = safeParseValue(CHAT_TOOLS[toolName].args as z.ZodTypeAny, parsed);
  if (!r.success) return { ok: false, error: `invalid arguments for ${toolName}: ${formatZodError(r.error)}` };
  return { ok: true, tool: toolName, args: r.data };
}

/** Runs a validated tool. */
export function runTool(scope: RequestScope, tool: ChatToolName, args: unknown, deps: ChatToolDeps): Promise<ChatSong[]> {
  return (CHAT_TOOLS[tool] as ToolDef<unknown>).run(scope, args, deps);
}

function song(r: { item_id: string; title?: string | null; author?: string | null; album?: string | null }): ChatSong {
  return { item_id: r.item_id, title: r.title ?? null, author: r.author ?? null, album: r.album ?? null };
}

/** The best metadata match of a title (and artist) on the selected server, or null. */
async function findSong(scope: RequestScope, d: ChatToolDeps, t: string, artist?: string): Promise<ChatSong | null> {
  const hits = await d.search.search(scope, { search_query: [t, artist].filter(Boolean).join(' '), start: 0, limit: 1 });
  if (hits[0]) return song(hits[0]);
  if (artist) {
    const byTitle = await d.search.search(scope, { search_query: t, start: 0, limit: 1 });
    if (byTitle[0]) return song(byTitle[0]);
  }
  return null;
}

/** Canonical ids -> rows available on the selected server (in order), at most `limit`. */
async function presentIds(scope: RequestScope, ids: string[], limit: number): Promise<ChatSong[]> {
  const mask = await scope.mask();
  const rows = ids.map((id) => scope.gen.index.rowOf(id)).filter((row) => row >= 0 && mask.has(row));
  const out = await scope.present(rows.slice(0, limit * 2).map((row) => ({ row, distance: 0 })));
  return out.slice(0, limit).map(song);
}
