/**
 * Writes an {@link ImportPlan} (the import from the reference, issue 34) into polyphony in ONE transaction, so a
 * failed import changes nothing and a dry run is the same transaction rolled back (its counts are exact).
 *
 * Like the registry's restore, this is one of the few places that writes other units' schemas (registry servers
 * and schedules, analysis exclusions, index anchors and radios, playlist rows, gateway users): one transaction
 * across them is what makes the import all or nothing. It holds the catalogue write lock EXCLUSIVE (no identity
 * resolve runs meanwhile).
 *
 * Idempotence (running it twice gives the same state): a server is the same when its kind and URL are; a song is
 * the same when one of its files is already mapped, else when its reference `fp_` id is already a song; users,
 * anchors and schedules by name; playlists by server and name; mappings, Chromaprints, exclusions by their keys.
 * Nothing polyphony already holds is overwritten (only empty song features are filled).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Cron } from 'croner';
import type { DataSource } from 'typeorm';
import type { ImportTableCount } from '@polyphony/contracts';
import { type BandLayout, bandKeys } from '../domain/identity/bands';
import { normalisePath, parentFolder } from '../domain/identity/gates';
import { CANONICAL_ID_PATTERN, computeSignature, formatCanonicalId, nextCode, unsignableCanonicalId } from '../domain/identity/signature';
import { normaliseArtistName } from '../domain/names';
import { REFERENCE_EMBEDDER_VERSION, type ImportPlan, type PlanSong, type Skips } from '../domain/reference-import/plan';
import type { ReferenceImportResult, ReferenceImportStore } from '../domain/reference-import/ports';
import { bumpAvailability } from './identity.repository';
import { encodeVector, signatureParam } from './codec';
import { CATALOGUE_WRITE_LOCK, lockExclusive } from './locks';
import type { Queryable } from './sql';

/** Rows per multi-row statement. */
const CHUNK = 1000;
const MATCH_TIERS = new Set(['fingerprint', 'path', 'tail', 'exact_meta', 'default', 'norm_meta', 'title_artist', 'analysis']);

/** Thrown inside the dry-run transaction to roll it back with its result. */
class DryRunRollback extends Error {
  constructor(readonly result: ReferenceImportResult) {
    super('dry run');
  }
}

const normUrl = (u: string | undefined | null): string => (u ?? '').trim().toLowerCase().replace(/\/+$/, '');
function* chunks<T>(xs: readonly T[], n = CHUNK): Generator<T[]> {
  for (let i = 0; i < xs.length; i += n) yield xs.slice(i, i + n);
}

/** See module docs. */
export class PgReferenceImportRepository implements ReferenceImportStore {
  constructor(
    private readonly ds: DataSource,
    /** The active id scheme (canonical id version and band layout). */
    private readonly scheme: () => { version: number; layout: BandLayout },
  ) {}

  /** The latest import run (status route). */
  async latest(): Promise<{ id: string; state: string; message: string; progress: number; details: Record<string, unknown> } | undefined> {
    const rows: Array<{ id: string; state: string; message: string; progress: number; details: Record<string, unknown> }> = await this.ds.query(
      `SELECT id::text, state, message, progress, details FROM catalogue.import_runs ORDER BY started_at DESC LIMIT 1`,
    );
    return rows[0];
  }

  async apply(plan: ImportPlan, skips: Skips, dryRun: boolean, stopped: () => boolean = () => false): Promise<ReferenceImportResult> {
    try {
      return await this.ds.transaction(async (m) => {
        await lockExclusive(m, [CATALOGUE_WRITE_LOCK]);
        const result = await this.write(m, plan, skips);
        if (dryRun) throw new DryRunRollback(result);
        if (stopped()) throw new Error('import stopped before its commit (cancelled or handed over): nothing was written');
        return result;
      });
    } catch (err) {
      if (err instanceof DryRunRollback) return err.result;
      throw err;
    }
  }

  private async write(m: Queryable, plan: ImportPlan, skips: Skips): Promise<ReferenceImportResult> {
    const tables: Record<string, ImportTableCount> = {};
    const count = (t: string): ImportTableCount => (tables[t] ??= { read: plan.read[t] ?? 0, imported: 0, existing: 0, skipped: 0 });
    const servers = await this.servers(m, plan, count('music_servers'));
    const items = await this.songs(m, plan, servers, skips, count('score'), count('track_server_map'));
    await this.artists(m, plan, servers, count('artist_server_map'));
    await this.chromaprints(m, plan, servers, skips, count('chromaprint'));
    await this.exclusions(m, plan, servers, count('analysis_exclusions'));
    await this.playlists(m, plan, servers, items, skips, count('playlist'));
    await this.anchorsAndRadios(m, plan, count('alchemy_anchors'), count('alchemy_radios'));
    await this.schedules(m, plan, skips, count('cron'));
    await this.users(m, plan, count('audiomuse_users'));
    if (plan.layout === 'single-server') count('app_config');
    for (const [t, c] of Object.entries(tables)) c.skipped = skips.count(t);
    await bumpAvailability(m, [...new Set(servers.values())]);
    return { tables, servers: Object.fromEntries(servers), touchedServers: [...new Set(servers.values())] };
  }

  /** Reference server id -> polyphony server id (existing one with the same kind and URL, else a new row). */
  private async servers(m: Queryable, plan: ImportPlan, c: ImportTableCount): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    // The credential-less seed entry of a fresh install (no mappings) goes, as when a first real server is added.
    if (plan.servers.length > 0) {
      await m.query(`DELETE FROM registry.music_servers s WHERE s.creds = '{}'::jsonb AND NOT EXISTS (SELECT 1 FROM catalogue.track_server_map t WHERE t.server_id = s.id::text)`);
    }
    const existing: Array<{ id: string; name: string; server_type: string; url: string | null; is_default: boolean }> = await m.query(
      `SELECT id::text, name, server_type, creds->>'url' AS url, is_default FROM registry.music_servers`,
    );
    let hasDefault = existing.some((s) => s.is_default);
    const names = new Set(existing.map((s) => s.name.toLowerCase()));
    for (const s of [...plan.servers].sort((a, b) => Number(b.isDefault) - Number(a.isDefault))) {
      const same = existing.find((e) => e.server_type === s.type && normUrl(e.url) === normUrl(s.creds.url) && normUrl(s.creds.url) !== '');
      if (same) {
        out.set(s.refId, same.id);
        c.existing++;
        continue;
      }
      let name = s.name.slice(0, 90);
      for (let n = 1; names.has(name.toLowerCase()); n++) name = `${s.name.slice(0, 80)} (AudioMuse${n > 1 ? ` ${n}` : ''})`;
      names.add(name.toLowerCase());
      const isDefault = s.isDefault && !hasDefault;
      const rows: Array<{ id: string }> = await m.query(
        `INSERT INTO registry.music_servers (name, server_type, creds, music_libraries, is_default) VALUES ($1, $2, $3::jsonb, $4::jsonb, $5) RETURNING id::text`,
        [name, s.type, JSON.stringify(s.creds), JSON.stringify(s.libraries), isDefault],
      );
      hasDefault ||= isDefault;
      out.set(s.refId, rows[0]!.id);
      existing.push({ id: rows[0]!.id, name, server_type: s.type, url: s.creds.url ?? null, is_default: isDefault });
      c.imported++;
    }
    return out;
  }

  /**
   * Songs: the same song when a file is already mapped or its `fp_` id exists; else a new song served under the
   * reference's embedder version (the catalogue must be empty or already serve it), with its signature and bands,
   * keeping the reference's content id (or minting one from the vector for a legacy provider-keyed row).
   * Returns reference item id -> polyphony item id.
   */
  private async songs(m: Queryable, plan: ImportPlan, servers: Map<string, string>, skips: Skips, c: ImportTableCount, cm: ImportTableCount): Promise<Map<string, string>> {
    const { version, layout } = this.scheme();
    const state: Array<{ served_version: string | null }> = await m.query(`SELECT served_version FROM catalogue.embedding_state WHERE id = 1`);
    const empty = ((await m.query(`SELECT NOT EXISTS (SELECT 1 FROM catalogue.embedding) AS e`)) as Array<{ e: boolean }>)[0]!.e;
    const served = empty ? null : (state[0]?.served_version ?? null);
    const canServe = served === null || served === REFERENCE_EMBEDDER_VERSION;
    if (canServe && plan.songs.length > 0) {
      await m.query(`INSERT INTO catalogue.embedding_state (id) VALUES (1) ON CONFLICT (id) DO NOTHING`);
      await m.query(
        `UPDATE catalogue.embedding_state SET served_version = $1, target_version = CASE WHEN $2::boolean OR target_version IS NULL THEN $1 ELSE target_version END, updated_at = now() WHERE id = 1`,
        [REFERENCE_EMBEDDER_VERSION, empty],
      );
    }

    // Known mappings of the servers involved and songs with the reference's ids.
    const mapped = new Map<string, string>();
    const serverIds = [...new Set(servers.values())];
    const rows: Array<{ server_id: string; provider_id: string; item_id: string }> = serverIds.length
      ? await m.query(`SELECT server_id, provider_id, item_id FROM catalogue.track_server_map WHERE server_id = ANY($1)`, [serverIds])
      : [];
    for (const r of rows) mapped.set(`${r.server_id}\u0000${r.provider_id}`, r.item_id);
    const taken = new Set<string>();
    for (const ids of chunks(plan.songs.map((s) => s.refItemId).filter((id) => CANONICAL_ID_PATTERN.test(id)), 5000)) {
      for (const r of (await m.query(`SELECT item_id FROM catalogue.score WHERE item_id = ANY($1)`, [ids])) as Array<{ item_id: string }>) taken.add(r.item_id);
    }

    const items = new Map<string, string>();
    const fresh: Array<{ song: PlanSong; itemId: string }> = [];
    const existingSongs: Array<{ song: PlanSong; itemId: string }> = [];
    const minted: Array<{ song: PlanSong; code: Uint32Array | null; serverId: string; providerId: string }> = [];
    for (const song of plan.songs) {
      const files = song.files.filter((f) => servers.has(f.refServerId));
      const known = files.map((f) => mapped.get(`${servers.get(f.refServerId)}\u0000${f.providerId}`)).find((x) => x !== undefined);
      if (known) existingSongs.push({ song, itemId: known });
      else if (CANONICAL_ID_PATTERN.test(song.refItemId) && taken.has(song.refItemId)) existingSongs.push({ song, itemId: song.refItemId });
      else if (!canServe) skips.add('score', `polyphony serves ${served} vectors: analyse this file with polyphony instead`, song.refItemId);
      else if (CANONICAL_ID_PATTERN.test(song.refItemId)) {
        fresh.push({ song, itemId: song.refItemId });
        taken.add(song.refItemId);
      } else {
        const sig = computeSignature(song.vector);
        const f = files[0];
        minted.push({ song, code: sig.ok ? sig.code : null, serverId: f ? servers.get(f.refServerId)! : 'none', providerId: f?.providerId ?? song.refItemId });
      }
    }
    // Legacy provider-keyed rows get a content id of polyphony's scheme (next free one when taken).
    for (const x of minted) {
      let id: string;
      if (x.code) {
        let code = x.code;
        for (;;) {
          id = formatCanonicalId(version, code);
          if (!taken.has(id) && !((await m.query(`SELECT 1 FROM catalogue.score WHERE item_id = $1`, [id])) as unknown[]).length) break;
          code = nextCode(code);
        }
      } else id = unsignableCanonicalId(x.serverId, x.providerId);
      taken.add(id);
      fresh.push({ song: x.song, itemId: id });
    }

    for (const batch of chunks(fresh)) {
      const inserted: Array<{ item_id: string; song_no: string }> = await m.query(
        `INSERT INTO catalogue.score (item_id, title, artist, album, album_artist, year, rating, duration_seconds, file_path, tempo, key, scale, energy,
           embedder_version, source_server_id, source_provider_id, mood_vector, other_features)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::real[], $8::float8[], $9::text[], $10::real[],
           $11::text[], $12::text[], $13::real[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[])
         ON CONFLICT (item_id) DO NOTHING RETURNING item_id, song_no`,
        [
          batch.map((x) => x.itemId), batch.map((x) => x.song.title), batch.map((x) => x.song.artist), batch.map((x) => x.song.album), batch.map((x) => x.song.albumArtist),
          batch.map((x) => (x.song.year === null ? null : Math.round(x.song.year))), batch.map((x) => x.song.rating), batch.map((x) => x.song.durationSeconds),
          batch.map((x) => x.song.files[0]?.filePath ?? null), batch.map((x) => x.song.tempo), batch.map((x) => x.song.key), batch.map((x) => x.song.scale), batch.map((x) => x.song.energy),
          batch.map(() => REFERENCE_EMBEDDER_VERSION), batch.map((x) => (x.song.files[0] ? servers.get(x.song.files[0].refServerId) ?? null : null)), batch.map((x) => x.song.files[0]?.providerId ?? null),
          batch.map((x) => x.song.moodVector), batch.map((x) => x.song.otherFeatures),
        ],
      );
      const songNo = new Map(inserted.map((r) => [r.item_id, r.song_no]));
      const sigs = batch.map((x) => computeSignature(x.song.vector));
      await m.query(
        `INSERT INTO catalogue.embedding (item_id, vector, signature, embedder_version) SELECT i, v, s::bit(200), $4 FROM unnest($1::text[], $2::bytea[], $3::text[]) AS t(i, v, s)`,
        [batch.map((x) => x.itemId), batch.map((x) => encodeVector(x.song.vector)), sigs.map((s) => (s.ok ? signatureParam(s.code) : null)), REFERENCE_EMBEDDER_VERSION],
      );
      const bandSong: string[] = [];
      const bandNo: number[] = [];
      const bandValue: number[] = [];
      batch.forEach((x, i) => {
        const sig = sigs[i]!;
        const no = songNo.get(x.itemId);
        if (!sig.ok || no === undefined) return;
        for (const k of bandKeys(sig.code, layout)) {
          bandSong.push(no);
          bandNo.push(k.band);
          bandValue.push(k.value);
        }
      });
      if (bandSong.length) await m.query(`INSERT INTO catalogue.signature_band (song_no, band_no, band_value) SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::int[])`, [bandSong, bandNo, bandValue]);
      c.imported += inserted.length;
    }
    // Songs polyphony holds: the reference vector is kept as an alternate (when not the served one) and empty features are filled.
    for (const batch of chunks(existingSongs)) {
      await m.query(
        `INSERT INTO catalogue.embedding_alt (item_id, embedder_version, vector)
         SELECT t.i, $3, t.v FROM unnest($1::text[], $2::bytea[]) AS t(i, v) JOIN catalogue.embedding e ON e.item_id = t.i AND e.embedder_version <> $3
         ON CONFLICT (item_id, embedder_version) DO NOTHING`,
        [batch.map((x) => x.itemId), batch.map((x) => encodeVector(x.song.vector)), REFERENCE_EMBEDDER_VERSION],
      );
      await m.query(
        `UPDATE catalogue.score s SET tempo = COALESCE(s.tempo, t.tempo), key = COALESCE(s.key, t.key), scale = COALESCE(s.scale, t.scale), energy = COALESCE(s.energy, t.energy),
                year = COALESCE(s.year, t.year), rating = COALESCE(s.rating, t.rating), duration_seconds = COALESCE(s.duration_seconds, t.duration),
                mood_vector = COALESCE(s.mood_vector, t.mood), other_features = COALESCE(s.other_features, t.other)
           FROM unnest($1::text[], $2::real[], $3::text[], $4::text[], $5::real[], $6::int[], $7::real[], $8::float8[], $9::text[], $10::text[])
                AS t(i, tempo, key, scale, energy, year, rating, duration, mood, other)
          WHERE s.item_id = t.i`,
        [batch.map((x) => x.itemId), batch.map((x) => x.song.tempo), batch.map((x) => x.song.key), batch.map((x) => x.song.scale), batch.map((x) => x.song.energy),
          batch.map((x) => (x.song.year === null ? null : Math.round(x.song.year))), batch.map((x) => x.song.rating), batch.map((x) => x.song.durationSeconds),
          batch.map((x) => x.song.moodVector), batch.map((x) => x.song.otherFeatures)],
      );
    }
    c.existing += existingSongs.length;
    for (const x of [...fresh, ...existingSongs]) items.set(x.song.refItemId, x.itemId);

    // Mappings (every file of every imported song; copies the reference merged stay on one song).
    const maps = [...fresh, ...existingSongs].flatMap((x) =>
      x.song.files.filter((f) => servers.has(f.refServerId)).map((f) => ({ ...f, serverId: servers.get(f.refServerId)!, itemId: x.itemId, duration: x.song.durationSeconds })),
    );
    for (const batch of chunks(maps)) {
      const norm = batch.map((f) => normalisePath(f.filePath));
      const inserted: unknown[] = await m.query(
        `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, folder, match_tier, duration_seconds)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[])
         ON CONFLICT (server_id, provider_id) DO NOTHING RETURNING 1`,
        [batch.map((f) => f.serverId), batch.map((f) => f.providerId), batch.map((f) => f.itemId), batch.map((f) => f.filePath),
          norm.map((n) => (n === null ? null : parentFolder(n))), batch.map((f) => (MATCH_TIERS.has(f.matchTier) ? f.matchTier : 'analysis')), batch.map((f) => f.duration)],
      );
      cm.imported += inserted.length;
      cm.existing += batch.length - inserted.length;
    }
    return items;
  }

  private async artists(m: Queryable, plan: ImportPlan, servers: Map<string, string>, c: ImportTableCount): Promise<void> {
    for (const batch of chunks(plan.artists)) {
      const inserted: unknown[] = await m.query(
        `INSERT INTO catalogue.artist_server_map (server_id, provider_artist_id, artist_name, artist_norm) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT (server_id, provider_artist_id) DO NOTHING RETURNING 1`,
        [batch.map((a) => servers.get(a.refServerId)!), batch.map((a) => a.providerArtistId), batch.map((a) => a.name), batch.map((a) => normaliseArtistName(a.name))],
      );
      c.imported += inserted.length;
      c.existing += batch.length - inserted.length;
    }
  }

  private async chromaprints(m: Queryable, plan: ImportPlan, servers: Map<string, string>, skips: Skips, c: ImportTableCount): Promise<void> {
    for (const batch of chunks(plan.chromaprints, 200)) {
      const present: Array<{ server_id: string; provider_id: string }> = await m.query(
        `SELECT server_id, provider_id FROM catalogue.track_server_map WHERE (server_id, provider_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [batch.map((p) => servers.get(p.refServerId)!), batch.map((p) => p.providerId)],
      );
      const ok = new Set(present.map((r) => `${r.server_id}\u0000${r.provider_id}`));
      for (const p of batch) {
        const sid = servers.get(p.refServerId)!;
        if (!ok.has(`${sid}\u0000${p.providerId}`)) {
          skips.add('chromaprint', 'its file is not mapped to an imported song', `${p.refServerId}/${p.providerId}`);
          continue;
        }
        const inserted: unknown[] = await m.query(
          `INSERT INTO catalogue.chromaprint (server_id, provider_id, fingerprint) VALUES ($1, $2, $3::int[]) ON CONFLICT (server_id, provider_id) DO NOTHING RETURNING 1`,
          [sid, p.providerId, p.words],
        );
        if (inserted.length) c.imported++;
        else c.existing++;
      }
    }
  }

  /** Exclusions become unanalyzable files with their reason (the metadata hash has no album or path: polyphony tries such a file once more). */
  private async exclusions(m: Queryable, plan: ImportPlan, servers: Map<string, string>, c: ImportTableCount): Promise<void> {
    const codes = new Set(['download_failed', 'undecodable', 'too_short']);
    for (const e of plan.exclusions) {
      const hash = createHash('sha256').update(JSON.stringify([e.title ?? '', e.artist ?? '', '', e.durationSeconds, ''])).digest('hex').slice(0, 32);
      const code = codes.has(e.reason) ? e.reason : 'undecodable';
      const inserted: unknown[] = await m.query(
        `INSERT INTO analysis.exclusions (server_id, provider_id, metadata_hash, reason, reason_code, title, artist, duration_seconds)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (server_id, provider_id) DO NOTHING RETURNING 1`,
        [servers.get(e.refServerId)!, e.providerId, hash, `Excluded by the reference (${e.reason})`, code, e.title, e.artist, e.durationSeconds],
      );
      if (inserted.length) c.imported++;
      else c.existing++;
    }
  }

  /**
   * The reference's clustering playlists (it keeps no provider playlist id: the name stands for it, as the clustering's
   * replace-by-name does) as `automatic` playlists of their server, tracks by the imported songs' ids.
   */
  private async playlists(m: Queryable, plan: ImportPlan, servers: Map<string, string>, items: Map<string, string>, skips: Skips, c: ImportTableCount): Promise<void> {
    const files = new Map<string, string>();
    for (const s of plan.songs) for (const f of s.files) if (!files.has(`${f.refServerId}\u0000${s.refItemId}`)) files.set(`${f.refServerId}\u0000${s.refItemId}`, f.providerId);
    for (const p of plan.playlists) {
      const serverId = servers.get(p.refServerId)!;
      const tracks = p.tracks.flatMap((t) => {
        const itemId = items.get(t.refItemId);
        const providerId = files.get(`${p.refServerId}\u0000${t.refItemId}`);
        if (!itemId || !providerId) {
          skips.add('playlist', 'its song is not imported or not on that server', `${p.name}/${t.refItemId}`);
          return [];
        }
        return [{ itemId, providerId, title: t.title, author: t.author }];
      });
      const id = randomUUID();
      const inserted: unknown[] = await m.query(
        `INSERT INTO playlist.playlists (id, server_id, provider_playlist_id, name, kind, track_count) VALUES ($1, $2, $3, $3, 'automatic', $4)
         ON CONFLICT (server_id, provider_playlist_id) DO NOTHING RETURNING 1`,
        [id, serverId, p.name, tracks.length],
      );
      if (!inserted.length) {
        c.existing += p.tracks.length;
        continue;
      }
      await m.query(
        `INSERT INTO playlist.playlist_tracks (playlist_id, position, item_id, provider_id, title, author) SELECT $1, n, i, pr, ti, au FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS t(n, i, pr, ti, au)`,
        [id, tracks.map((_, i) => i), tracks.map((t) => t.itemId), tracks.map((t) => t.providerId), tracks.map((t) => t.title), tracks.map((t) => t.author)],
      );
      c.imported += tracks.length;
    }
  }

  private async anchorsAndRadios(m: Queryable, plan: ImportPlan, ca: ImportTableCount, cr: ImportTableCount): Promise<void> {
    for (const a of plan.anchors) {
      const inserted: unknown[] = await m.query(
        `INSERT INTO "index".anchors (name, centroid, dim, exclusions, created_by, embedder_version) VALUES ($1, $2::real[], $3, $4::jsonb, 'import:audiomuse', $5)
         ON CONFLICT ((lower(name))) DO NOTHING RETURNING 1`,
        [a.name, a.centroid, a.centroid.length, JSON.stringify(Array.isArray(a.exclusions) ? a.exclusions : []), REFERENCE_EMBEDDER_VERSION],
      );
      if (inserted.length) ca.imported++;
      else ca.existing++;
    }
    for (const r of plan.radios) {
      const inserted: unknown[] = await m.query(
        `INSERT INTO "index".radios (anchor_id, temperature, n_results, enabled) SELECT id, $2, $3, $4 FROM "index".anchors WHERE lower(name) = lower($1)
         ON CONFLICT (anchor_id) DO NOTHING RETURNING 1`,
        [r.anchorName, r.temperature, r.nResults, r.enabled],
      );
      if (inserted.length) cr.imported++;
      else cr.existing++;
    }
  }

  /** Schedules (croner checks the expression and time zone and gives the first run; the same name, kind and expression is the same schedule). */
  private async schedules(m: Queryable, plan: ImportPlan, skips: Skips, c: ImportTableCount): Promise<void> {
    for (const s of plan.schedules) {
      let next: Date | null;
      try {
        next = new Cron(s.cron, { timezone: s.timezone, paused: true }).nextRun() ?? null;
      } catch (err) {
        skips.add('cron', `invalid expression or time zone: ${(err as Error).message}`, s.name);
        continue;
      }
      const inserted: unknown[] = await m.query(
        `INSERT INTO registry.schedules (name, kind, cron, timezone, enabled, params, next_run_at)
         SELECT $1, $2, $3, $4, $5, '{}'::jsonb, $6 WHERE NOT EXISTS (SELECT 1 FROM registry.schedules WHERE lower(name) = lower($1) AND kind = $2 AND cron = $3) RETURNING 1`,
        [s.name, s.kind, s.cron, s.timezone, s.enabled, s.enabled ? next : null],
      );
      if (inserted.length) c.imported++;
      else c.existing++;
    }
  }

  /** Users keep their Argon2 hash (the gateway verifies it at first login and re-hashes); an existing polyphony account of the same name is kept. */
  private async users(m: Queryable, plan: ImportPlan, c: ImportTableCount): Promise<void> {
    for (const u of plan.users) {
      const inserted: unknown[] = await m.query(
        `INSERT INTO auth.service_users (username, role, password_hash) VALUES ($1, $2, $3) ON CONFLICT ((lower(username))) DO NOTHING RETURNING 1`,
        [u.username, u.role, u.passwordHash],
      );
      if (inserted.length) c.imported++;
      else c.existing++;
    }
  }
}
