/**
 * What comes across from the reference's tables (issue 34; reference schema: reference-implementation.md 1.3,
 * 2.6, 5), decided without touching polyphony: the {@link ImportPlan} the writer applies, and every row left
 * out with its reason. Pure: rows in (text values, source.ts), plan out.
 *
 * Layouts: v3.x multi-server (`music_servers`, `track_server_map`, `artist_server_map`) or the older
 * single-server one (no `music_servers` table or rows: `score.item_id` is the provider id on the one server,
 * whose settings are the `MEDIASERVER_TYPE` / `<TYPE>_URL`... keys of `app_config`; `score.file_path` the path).
 */
import { inflateSync } from 'node:zlib';
import { CREDENTIAL_SETS, LEGACY_SERVER_KEYS, OPTIONAL_CREDS, SCHEDULE_KINDS, type ScheduleKind } from '@polyphony/contracts';
import type { ReferenceRow, ReferenceSource } from './source';

/** The embedder version imported vectors are served under: the reference's MusiCNN MSD penultimate layer, 200-d mean over 3 s patches. */
export { REFERENCE_EMBEDDER_VERSION } from '@polyphony/contracts';
/** Dimension of the reference's vectors. */
export const REFERENCE_DIM = 200;

type ServerType = keyof typeof CREDENTIAL_SETS;
const SERVER_TYPES = Object.keys(CREDENTIAL_SETS) as ServerType[];

export interface PlanServer {
  refId: string;
  name: string;
  type: ServerType;
  creds: Record<string, string>;
  libraries: string[];
  isDefault: boolean;
}
export interface PlanFile {
  refServerId: string;
  providerId: string;
  filePath: string | null;
  matchTier: string;
}
export interface PlanSong {
  refItemId: string;
  vector: Float32Array;
  title: string;
  artist: string;
  album: string | null;
  albumArtist: string | null;
  year: number | null;
  rating: number | null;
  durationSeconds: number | null;
  tempo: number | null;
  key: string | null;
  scale: string | null;
  energy: number | null;
  moodVector: string | null;
  otherFeatures: string | null;
  files: PlanFile[];
}
export interface ImportPlan {
  layout: 'multi-server' | 'single-server';
  servers: PlanServer[];
  songs: PlanSong[];
  artists: Array<{ refServerId: string; name: string; providerArtistId: string }>;
  chromaprints: Array<{ refServerId: string; providerId: string; words: number[] }>;
  exclusions: Array<{ refServerId: string; providerId: string; title: string | null; artist: string | null; durationSeconds: number | null; reason: string }>;
  /** Clustering playlists (reference `playlist`: one row per track), per server and name, tracks by reference item id. */
  playlists: Array<{ refServerId: string; name: string; tracks: Array<{ refItemId: string; title: string | null; author: string | null }> }>;
  anchors: Array<{ name: string; centroid: number[]; exclusions: unknown }>;
  radios: Array<{ anchorName: string; temperature: number; nResults: number; enabled: boolean }>;
  schedules: Array<{ name: string; kind: ScheduleKind; cron: string; enabled: boolean; timezone: string }>;
  users: Array<{ username: string; role: 'admin' | 'user'; passwordHash: string }>;
  /** Rows read per reference table. */
  read: Record<string, number>;
}

/** Rows left out, by table and reason (count and a few example keys). */
export class Skips {
  private readonly byKey = new Map<string, { table: string; reason: string; count: number; examples: string[] }>();
  add(table: string, reason: string, example: string): void {
    const k = `${table}\u0000${reason}`;
    const e = this.byKey.get(k) ?? { table, reason, count: 0, examples: [] };
    e.count++;
    if (e.examples.length < 5) e.examples.push(example);
    this.byKey.set(k, e);
  }
  count(table: string): number {
    let n = 0;
    for (const e of this.byKey.values()) if (e.table === table) n += e.count;
    return n;
  }
  list() {
    return [...this.byKey.values()];
  }
}

const num = (v: string | null | undefined): number | null => {
  if (v === null || v === undefined || v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
};
const str = (v: string | null | undefined): string | null => (v === null || v === undefined || v === '' ? null : v);
const bool = (v: string | null | undefined, dflt: boolean): boolean => (v === null || v === undefined ? dflt : ['t', 'true', '1', 'on', 'yes'].includes(v.toLowerCase()));
const first = (r: ReferenceRow, ...cols: string[]): string | null => {
  for (const c of cols) if (r[c] !== undefined && r[c] !== null) return r[c]!;
  return null;
};

/** A `bytea` text value (`\x` + hex) as bytes; null when not hex. */
export function byteaBytes(v: string | null | undefined): Buffer | null {
  if (v === null || v === undefined || !v.startsWith('\\x')) return null;
  return Buffer.from(v.slice(2), 'hex');
}

/** The reference's raw float32 vector (little-endian, numpy `tobytes`); null unless exactly `dim` finite values. */
export function decodeReferenceVector(v: string | null | undefined, dim = REFERENCE_DIM): Float32Array | null {
  const b = byteaBytes(v);
  if (!b || b.length !== dim * 4) return null;
  const out = new Float32Array(dim);
  for (let i = 0; i < dim; i++) out[i] = b.readFloatLE(i * 4);
  return out.every(Number.isFinite) ? out : null;
}

/** A reference Chromaprint (zlib of `fpcalc -raw` uint32 words, little-endian) as signed int words; null when unreadable. */
export function decodeReferenceChromaprint(v: string | null | undefined): number[] | null {
  const b = byteaBytes(v);
  if (!b) return null;
  try {
    const raw = inflateSync(b);
    if (raw.length === 0 || raw.length % 4 !== 0) return null;
    return Array.from({ length: raw.length / 4 }, (_, i) => raw.readInt32LE(i * 4));
  } catch {
    return null;
  }
}

/** Settings keys of the single-server layout (app_config) per kind -> credential key (reference config names). */
const LEGACY_KEYS: Record<ServerType, Record<string, string>> = LEGACY_SERVER_KEYS;
/** The reference id the single server gets in a plan. */
export const LEGACY_SERVER_REF = 'legacy-default';

/** The reference task names of `cron` rows -> polyphony schedule kinds. */
const CRON_KINDS: Record<string, ScheduleKind> = {
  main_analysis: 'analysis', analysis: 'analysis', run_analysis: 'analysis',
  main_clustering: 'clustering', clustering: 'clustering', run_clustering: 'clustering',
  cleaning: 'cleaning', server_sweep: 'sweep', sweep: 'sweep', alchemy_radio: 'radios', radios: 'radios', radio: 'radios',
  index_rebuild: 'index_rebuild', backup: 'backup', album_of_the_week: 'album_of_the_week',
};

const libraries = (v: string | null | undefined): string[] => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const credsOf = (type: ServerType, raw: Record<string, unknown>): Record<string, string> => {
  const allowed = new Set([...CREDENTIAL_SETS[type].flat(), ...OPTIONAL_CREDS[type]]);
  return Object.fromEntries(Object.entries(raw).filter(([k, v]) => allowed.has(k) && typeof v === 'string' && v !== '').map(([k, v]) => [k, v as string]));
};

/**
 * Reads every table the import uses and decides what comes across (see module docs).
 * @param onProgress called after each table with its name
 */
export async function planImport(src: ReferenceSource, skips: Skips, onProgress: (table: string) => Promise<void> = async () => undefined): Promise<ImportPlan> {
  const tables = await src.tables();
  const read: Record<string, number> = {};
  const rows = async (t: string): Promise<ReferenceRow[]> => {
    const r = tables.has(t) ? await src.rows(t) : [];
    if (tables.has(t)) read[t] = r.length;
    await onProgress(t);
    return r;
  };
  if (!tables.has('score')) throw new PlanError('The source has no `score` table: it is not a database of the reference implementation');

  // Servers.
  const serverRows = await rows('music_servers');
  const appConfig = new Map((await rows('app_config')).map((r) => [r.key ?? '', r.value ?? '']));
  const servers: PlanServer[] = [];
  for (const r of serverRows) {
    const type = (r.server_type ?? '').toLowerCase() as ServerType;
    if (!SERVER_TYPES.includes(type)) {
      skips.add('music_servers', `server type ${r.server_type} is not supported`, r.server_id ?? '');
      continue;
    }
    let raw: Record<string, unknown> = {};
    try {
      raw = r.creds ? (JSON.parse(r.creds) as Record<string, unknown>) : {};
    } catch {
      skips.add('music_servers', 'creds are not JSON (server kept without credentials)', r.server_id ?? '');
    }
    servers.push({ refId: r.server_id!, name: r.name ?? type, type, creds: credsOf(type, raw), libraries: libraries(r.music_libraries), isDefault: bool(r.is_default, false) });
  }
  const layout: ImportPlan['layout'] = servers.length > 0 || serverRows.length > 0 ? 'multi-server' : 'single-server';
  if (layout === 'single-server') {
    const type = (appConfig.get('MEDIASERVER_TYPE') ?? '').trim().toLowerCase() as ServerType;
    if (SERVER_TYPES.includes(type)) {
      const creds: Record<string, string> = {};
      for (const [k, c] of Object.entries(LEGACY_KEYS[type])) if (appConfig.get(k)) creds[c] = appConfig.get(k)!;
      servers.push({ refId: LEGACY_SERVER_REF, name: type.charAt(0).toUpperCase() + type.slice(1), type, creds, libraries: libraries(appConfig.get('MUSIC_LIBRARIES') ?? null), isDefault: true });
    }
  }
  if (servers.length > 0 && !servers.some((s) => s.isDefault)) servers[0]!.isDefault = true;
  const serverIds = new Set(servers.map((s) => s.refId));

  // Songs with their vectors and files.
  const vectors = new Map<string, string | null>();
  for (const r of await rows('embedding')) vectors.set(r.item_id ?? '', r.embedding ?? null);
  const files = new Map<string, PlanFile[]>();
  for (const r of await rows('track_server_map')) {
    if (!serverIds.has(r.server_id ?? '')) {
      skips.add('track_server_map', 'server not imported', `${r.server_id}/${r.provider_track_id}`);
      continue;
    }
    const list = files.get(r.item_id ?? '') ?? [];
    list.push({ refServerId: r.server_id!, providerId: r.provider_track_id!, filePath: str(r.file_path), matchTier: r.match_tier ?? 'analysis' });
    files.set(r.item_id ?? '', list);
  }
  const songs: PlanSong[] = [];
  for (const r of await rows('score')) {
    const id = r.item_id!;
    const vector = decodeReferenceVector(vectors.get(id) ?? null);
    if (!vector) {
      skips.add('score', vectors.has(id) ? 'embedding is not 200 finite float32 values' : 'no embedding row (not analysed)', id);
      continue;
    }
    let songFiles = files.get(id) ?? [];
    if (layout === 'single-server' && servers[0] && !id.startsWith('fp_')) songFiles = [{ refServerId: servers[0].refId, providerId: id, filePath: str(r.file_path), matchTier: 'analysis' }];
    songs.push({
      refItemId: id, vector, title: r.title ?? '', artist: r.author ?? '', album: str(r.album), albumArtist: str(r.album_artist),
      year: num(r.year), rating: num(r.rating), durationSeconds: num(r.duration), tempo: num(r.tempo), key: str(r.key), scale: str(r.scale),
      energy: num(r.energy), moodVector: str(r.mood_vector), otherFeatures: str(r.other_features), files: songFiles,
    });
  }

  const artists: ImportPlan['artists'] = [];
  for (const r of await rows('artist_server_map')) {
    if (serverIds.has(r.server_id ?? '') && r.artist_name && r.provider_artist_id) artists.push({ refServerId: r.server_id!, name: r.artist_name, providerArtistId: r.provider_artist_id });
    else skips.add('artist_server_map', 'server not imported or empty row', `${r.server_id}/${r.provider_artist_id}`);
  }

  const singleRef = layout === 'single-server' ? servers[0]?.refId : undefined;
  const chromaprints: ImportPlan['chromaprints'] = [];
  for (const r of await rows('chromaprint')) {
    const server = r.server_id ?? singleRef ?? '';
    const words = decodeReferenceChromaprint(r.fingerprint);
    if (!serverIds.has(server)) skips.add('chromaprint', 'server not imported', `${r.server_id}/${r.provider_track_id}`);
    else if (!words) skips.add('chromaprint', 'fingerprint is not zlib-compressed uint32 words', `${r.server_id}/${r.provider_track_id}`);
    else chromaprints.push({ refServerId: server, providerId: r.provider_track_id!, words });
  }

  const exclusions: ImportPlan['exclusions'] = [];
  for (const r of await rows('analysis_exclusions')) {
    const server = r.server_id ?? singleRef ?? '';
    if (!serverIds.has(server)) {
      skips.add('analysis_exclusions', 'server not imported', `${r.server_id}/${r.provider_item_id}`);
      continue;
    }
    exclusions.push({ refServerId: server, providerId: r.provider_item_id!, title: str(r.title), artist: str(r.artist), durationSeconds: num(r.duration_seconds), reason: r.reason_code ?? 'undecodable' });
  }

  const playlists = new Map<string, ImportPlan['playlists'][number]>();
  for (const r of await rows('playlist')) {
    const server = r.server_id ?? singleRef ?? servers.find((s) => s.isDefault)?.refId ?? '';
    if (!serverIds.has(server) || !r.playlist_name || !r.item_id) {
      skips.add('playlist', 'server not imported or empty row', `${r.playlist_name}/${r.item_id}`);
      continue;
    }
    const k = `${server}\u0000${r.playlist_name}`;
    const p = playlists.get(k) ?? { refServerId: server, name: r.playlist_name, tracks: [] };
    p.tracks.push({ refItemId: r.item_id, title: str(r.title), author: str(r.author) });
    playlists.set(k, p);
  }

  const anchors: ImportPlan['anchors'] = [];
  for (const r of await rows('alchemy_anchors')) {
    let centroid: unknown;
    try {
      centroid = r.centroid ? JSON.parse(r.centroid) : null;
    } catch {
      centroid = null;
    }
    if (!r.name || !Array.isArray(centroid) || centroid.length === 0 || !centroid.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      skips.add('alchemy_anchors', 'centroid is not a JSON array of numbers', r.name ?? '');
      continue;
    }
    let ex: unknown = [];
    try {
      ex = r.exclusions ? JSON.parse(r.exclusions) : [];
    } catch {
      ex = [];
    }
    anchors.push({ name: r.name.slice(0, 200), centroid: centroid as number[], exclusions: ex });
  }

  const radios: ImportPlan['radios'] = [];
  for (const r of await rows('alchemy_radios')) {
    const anchorName = first(r, 'anchor_name', 'anchor', 'name');
    const temperature = num(first(r, 'temperature')) ?? 1;
    const nResults = num(first(r, 'n_results', 'num_results', 'size', 'n')) ?? 50;
    if (!anchorName || !anchors.some((a) => a.name.toLowerCase() === anchorName.toLowerCase())) {
      skips.add('alchemy_radios', 'its anchor is not imported', anchorName ?? '');
      continue;
    }
    radios.push({ anchorName, temperature: Math.max(0, temperature), nResults: Math.max(1, Math.round(nResults)), enabled: bool(first(r, 'enabled'), true) });
  }

  const schedules: ImportPlan['schedules'] = [];
  for (const r of await rows('cron')) {
    const task = (first(r, 'task_type', 'task', 'job', 'name') ?? '').toLowerCase();
    const kind = CRON_KINDS[task] ?? (SCHEDULE_KINDS as readonly string[]).find((k) => k === task);
    const cron = first(r, 'cron_expr', 'cron_expression', 'expression', 'cron', 'schedule');
    if (!kind || !cron) {
      skips.add('cron', kind ? 'no cron expression' : `task ${task || '(none)'} has no polyphony schedule kind`, first(r, 'name', 'id') ?? '');
      continue;
    }
    schedules.push({ name: (first(r, 'name') ?? `Imported ${kind}`).slice(0, 100), kind: kind as ScheduleKind, cron, enabled: bool(first(r, 'enabled'), true), timezone: first(r, 'timezone', 'tz') ?? 'UTC' });
  }

  const users: ImportPlan['users'] = [];
  for (const r of await rows('audiomuse_users')) {
    if (!r.username || !r.password_hash) {
      skips.add('audiomuse_users', 'no username or password hash', r.username ?? r.id ?? '');
      continue;
    }
    users.push({ username: r.username, role: r.role === 'admin' ? 'admin' : 'user', passwordHash: r.password_hash });
  }

  // CLAP and lyrics embeddings are not read: polyphony computes its own text and lyrics features.
  return { layout, servers, songs, artists, chromaprints, exclusions, playlists: [...playlists.values()], anchors, radios, schedules, users, read };
}

/** The source is not a reference database (400). */
export class PlanError extends Error {}
