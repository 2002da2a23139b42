import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { api, encodeSnapshotPage, SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE, type SnapshotTrack, type SnapshotTrackBytes } from '@polyphony/contracts';
import { sendSnapshotStream } from '@polyphony/platform';
import type { ServerConnection, ServerType } from '@polyphony/media-servers';

/** A media server known to the fake registry, with its mapping rows. */
export interface FakeServerEntry {
  id: string;
  name: string;
  type: ServerType;
  isDefault: boolean;
  connection: ServerConnection;
  /** canonical id -> provider track id. */
  tracks: Map<string, string>;
  /** canonical id -> provider artist id of the track's artist. */
  artistIds: Map<string, string>;
  /** provider track id -> canonical id. */
  reverse: Map<string, string>;
}

/** A catalogue song as the fake holds it (mappings come from the servers). */
export type FakeSong = Omit<SnapshotTrack, 'mappings'>;

/**
 * In-memory stand-in for the two peers the index calls: the catalogue-identity internal API
 * (`/internal/snapshot/tracks`, `/internal/mappings/rows`, `/internal/mappings/changes` with a mapping log
 * written by `map`/`unmap`/`removeSong`; the per-query translation endpoints `/internal/availability/:id`,
 * `/internal/ids/resolve-input`, `/internal/ids/map-output` are still served and counted, so tests can show
 * the index no longer calls them; shapes from shared/contracts/src/catalogue.ts), `/internal/snapshot/tracks/by-ids`,
 * the registry's `/internal/servers/:id` and the analysis worker's `/internal/analysis/run` (`analysisRunLive`). One express app serves both, so tests and benchmarks pass its URL as both
 * peers. It counts calls per endpoint so tests can check batching. It does not check signatures.
 */
export class FakePeers {
  readonly songs = new Map<string, FakeSong>();
  readonly servers = new Map<string, FakeServerEntry>();
  readonly calls = { snapshot: 0, snapshotBinary: 0, snapshotStream: 0, snapshotByIds: 0, snapshotChanges: 0, analysisRun: 0, availability: 0, availabilityVersion: 0, resolveInput: 0, mapOutput: 0, server: 0, artists: 0, mappingRows: 0, mappingChanges: 0 };
  /** The mapping log (`/internal/mappings/changes`): [seq, serverId, providerId, itemId | null]. */
  readonly log: Array<[number, string, string, string | null]> = [];
  /** Entries with seq <= this were "pruned" (a reader behind it gets `reset`). */
  prunedThrough = 0;
  /** Bumped on every mapping change (the availability `version`). */
  version = 1;
  /** When true, the snapshot endpoint answers 503 (an unreachable catalogue, for failure tests). */
  failSnapshot = false;
  /**
   * When set, every snapshot page after the first waits for this promise before it is answered (a build held
   * mid-snapshot, for takeover and cancel tests).
   */
  holdSnapshot?: Promise<void>;
  /** Called when a snapshot page starts waiting for {@link holdSnapshot}. */
  onSnapshotHeld?: () => void;
  /** When false, the snapshot endpoint answers JSON whatever the caller accepts (a catalogue older than the binary page). */
  binarySnapshot = true;
  /**
   * When false, the snapshot endpoint never streams (a catalogue older than the snapshot stream: one page a request,
   * binary or JSON). When true (default) a caller whose Accept prefers `SNAPSHOT_STREAM_TYPE` gets every page from
   * `after` on in one response; `calls.snapshot` counts each page served either way, `calls.snapshotStream` the streams.
   */
  streamSnapshot = true;
  /**
   * Cuts the next snapshot streams after this many pages each (the connection destroyed mid-answer, as when the catalogue
   * restarts mid-snapshot), then counts down; 0 = none. `cutSnapshotStreamsAfter` is that many pages, `cutSnapshotStreams` how many streams.
   */
  cutSnapshotStreams = 0;
  cutSnapshotStreamsAfter = 1;
  /**
   * Songs the snapshot pages leave out while `/internal/snapshot/tracks/by-ids` still finds them: a song added after a
   * build's snapshot passed its key (the live library's race with a full build, issue 35).
   */
  readonly snapshotHidden = new Set<string>();
  /** What the analysis worker's `GET /internal/analysis/run` answers: whether a full analysis run is live. */
  analysisRunLive = false;
  private server?: Server;
  private sortedIds?: string[];
  /**
   * The change feed (`/internal/snapshot/changes`, issue 35): per song id the position of its last change (added,
   * replaced, mapped, unmapped, removed); a mark is the next position. `changeFeed = false` answers 404 (a catalogue
   * older than the feed); `changeFeedCatalogue` is this log's identity (a new value = a reset catalogue).
   */
  changeFeed = true;
  changeFeedCatalogue = `fake-${Math.random().toString(36).slice(2)}`;
  private changePos = 1;
  private readonly changedAt = new Map<string, number>();

  private songChanged(itemId: string): void {
    this.changedAt.set(itemId, this.changePos++);
  }

  /** The change feed's answer for `since` (the rules of the catalogue's ChangeFeedRepository, positions for xids). */
  snapshotChanges(since: string | undefined, catalogue: string | undefined, limit: number): { catalogue: string; mark: string; changed: string[] | null; reason?: 'first' | 'other-catalogue' | 'future' | 'too-many' } {
    const base = { catalogue: this.changeFeedCatalogue, mark: String(this.changePos) };
    if (since === undefined) return { ...base, changed: null, reason: 'first' };
    if (catalogue !== this.changeFeedCatalogue) return { ...base, changed: null, reason: 'other-catalogue' };
    const from = Number(since);
    if (from > this.changePos) return { ...base, changed: null, reason: 'future' };
    const changed: string[] = [];
    for (const [id, at] of this.changedAt) if (at >= from) changed.push(id);
    if (changed.length > limit) return { ...base, changed: null, reason: 'too-many' };
    return { ...base, changed };
  }

  /** Adds or replaces a catalogue song. */
  addSong(song: FakeSong): void {
    this.songs.set(song.itemId, song);
    this.songChanged(song.itemId);
    this.sortedIds = undefined;
  }

  removeSong(itemId: string): void {
    this.songs.delete(itemId);
    this.songChanged(itemId);
    for (const s of this.servers.values()) {
      const p = s.tracks.get(itemId);
      if (p !== undefined) this.logChange(s.id, p, null);
      if (p !== undefined && s.reverse.get(p) === itemId) s.reverse.delete(p);
      s.tracks.delete(itemId);
      s.artistIds.delete(itemId);
    }
    this.sortedIds = undefined;
    this.version++;
  }

  addServer(entry: Omit<FakeServerEntry, 'tracks' | 'artistIds' | 'reverse'>): FakeServerEntry {
    const full: FakeServerEntry = { ...entry, tracks: new Map(), artistIds: new Map(), reverse: new Map() };
    this.servers.set(entry.id, full);
    return full;
  }

  /** Maps a canonical song on a server under `providerId` (and its artist under `artistId`). */
  map(serverId: string, itemId: string, providerId: string, artistId?: string): void {
    const s = this.servers.get(serverId);
    if (!s) throw new Error(`unknown server ${serverId}`);
    const old = s.tracks.get(itemId);
    if (old !== undefined && old !== providerId) {
      this.logChange(serverId, old, null);
      if (s.reverse.get(old) === itemId) s.reverse.delete(old);
    }
    s.tracks.set(itemId, providerId);
    this.logChange(serverId, providerId, itemId);
    if (!s.reverse.has(providerId)) s.reverse.set(providerId, itemId);
    if (artistId) s.artistIds.set(itemId, artistId);
    this.songChanged(itemId);
    this.version++;
  }

  unmap(serverId: string, itemId: string): void {
    const s = this.servers.get(serverId);
    const p = s?.tracks.get(itemId);
    if (s && p !== undefined) {
      this.logChange(serverId, p, null);
      s.tracks.delete(itemId);
      if (s.reverse.get(p) === itemId) s.reverse.delete(p);
    }
    this.songChanged(itemId);
    this.version++;
  }

  /** Highest log position. */
  get seq(): number {
    return this.log.length ? this.log[this.log.length - 1]![0] : this.prunedThrough;
  }

  private logChange(serverId: string, providerId: string, itemId: string | null): void {
    this.log.push([this.seq + 1, serverId, providerId, itemId]);
  }

  /** Every current mapping [serverId, providerId, itemId] in key order (what /internal/mappings/rows pages). */
  mappingRows(): Array<[string, string, string]> {
    const rows: Array<[string, string, string]> = [];
    for (const s of this.servers.values()) for (const [itemId, p] of s.tracks) if (this.songs.has(itemId)) rows.push([s.id, p, itemId]);
    return rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  }

  /** Provider id of a canonical song on a server (throws when absent: test helper). */
  providerId(serverId: string, itemId: string): string {
    const p = this.servers.get(serverId)?.tracks.get(itemId);
    if (!p) throw new Error(`${itemId} is not on ${serverId}`);
    return p;
  }

  /** Canonical id behind a provider id of a server, or undefined. */
  canonicalOf(serverId: string, providerId: string): string | undefined {
    return this.servers.get(serverId)?.reverse.get(providerId);
  }

  /** Waits for {@link holdSnapshot} before a page after the first (`after` set), single or streamed. */
  private async heldPage(after: string | undefined): Promise<void> {
    if (!this.holdSnapshot || after === undefined) return;
    this.onSnapshotHeld?.();
    await this.holdSnapshot;
  }

  /** The express app (exported for in-process use). */
  app(): express.Express {
    const app = express();
    app.use(express.json({ limit: '50mb' }));
    app.get(api.internal.snapshotTracks.path, async (req, res) => {
      this.calls.snapshot++;
      await this.heldPage(typeof req.query.after === 'string' ? req.query.after : undefined);
      if (this.failSnapshot) {
        res.status(503).json({ error: 'catalogue database unavailable', code: 'upstream_unavailable', request_id: 'fake' });
        return;
      }
      const after = typeof req.query.after === 'string' ? req.query.after : undefined;
      const limit = Math.min(5000, Math.max(1, Number(req.query.limit ?? 1000)));
      const pageAfter = (from: string | undefined) => {
        const ids = this.snapshotHidden.size ? this.ids().filter((id) => !this.snapshotHidden.has(id)) : this.ids();
        let start = 0;
        if (from !== undefined) {
          let lo = 0;
          let hi = ids.length;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (ids[mid]! <= from) lo = mid + 1;
            else hi = mid;
          }
          start = lo;
        }
        const page = ids.slice(start, start + limit);
        return { page, next: start + limit < ids.length ? page[page.length - 1]! : null, total: from === undefined ? ids.length : undefined };
      };
      const bytesOf = (page: readonly string[]): SnapshotTrackBytes[] =>
        page.map((id) => {
          const { embedding, ...rest } = this.songs.get(id)!;
          return { ...rest, vector: Buffer.from(embedding, 'base64'), mappings: this.mappingsOf(id) };
        });
      const wanted = req.accepts(['application/json', SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE]);
      // The snapshot stream as the catalogue serves it (platform sendSnapshotStream), optionally cut mid-way.
      if (this.binarySnapshot && this.streamSnapshot && wanted === SNAPSHOT_STREAM_TYPE) {
        this.calls.snapshot--;
        this.calls.snapshotStream++;
        const cutAfter = this.cutSnapshotStreams > 0 ? (this.cutSnapshotStreams--, this.cutSnapshotStreamsAfter) : Infinity;
        let served = 0;
        void sendSnapshotStream(
          res,
          async (from) => {
            await this.heldPage(from);
            if (served >= cutAfter) throw new Error('fake catalogue restarted mid-snapshot');
            served++;
            this.calls.snapshot++;
            this.calls.snapshotBinary++;
            const { page, next, total } = pageAfter(from);
            return { tracks: bytesOf(page), next, ...(total !== undefined ? { total } : {}) };
          },
          after,
        ).catch(() => res.destroy());
        return;
      }
      const { page, next, total } = pageAfter(after);
      // Content negotiation as the catalogue does it (internal.routes.ts): the binary page when Accept prefers it.
      if (this.binarySnapshot && (wanted === SNAPSHOT_PAGE_BINARY_TYPE || wanted === SNAPSHOT_STREAM_TYPE)) {
        this.calls.snapshotBinary++;
        const tracks = bytesOf(page);
        const body = encodeSnapshotPage({ tracks, next, total });
        res.status(200).type(SNAPSHOT_PAGE_BINARY_TYPE).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
        return;
      }
      const tracks: SnapshotTrack[] = page.map((id) => ({ ...this.songs.get(id)!, mappings: this.mappingsOf(id) }));
      res.json({ tracks, next, ...(total !== undefined ? { total } : {}) });
    });
    app.get(api.internal.snapshotChanges.path, (req, res) => {
      this.calls.snapshotChanges++;
      if (!this.changeFeed) {
        res.status(404).json({ error: 'not found' });
        return;
      }
      const q = req.query as { since?: string; catalogue?: string; limit?: string };
      res.json(this.snapshotChanges(q.since, q.catalogue, Number(q.limit ?? 10_000)));
    });
    app.post(api.internal.snapshotTracksByIds.path, (req, res) => {
      this.calls.snapshotByIds++;
      const want = (req.body as { itemIds?: unknown }).itemIds;
      const ids = Array.isArray(want) ? [...new Set(want.filter((x): x is string => typeof x === 'string'))] : [];
      res.json({ tracks: ids.filter((id) => this.songs.has(id)).map((id) => ({ ...this.songs.get(id)!, mappings: this.mappingsOf(id) })) });
    });
    app.get(api.internal.analysisRunLive.path, (_req, res) => {
      this.calls.analysisRun++;
      res.json({ live: this.analysisRunLive, task_id: this.analysisRunLive ? 'fake-run' : null });
    });
    let rowsCache: { seq: number; rows: Array<[string, string, string]> } | undefined;
    app.get(api.internal.mappingRows.path, (req, res) => {
      this.calls.mappingRows++;
      const seq = this.seq;
      if (req.query.after === undefined || rowsCache?.seq !== seq) rowsCache = { seq, rows: this.mappingRows() };
      const rows = rowsCache.rows;
      const start = req.query.after === undefined ? 0 : Number(req.query.after);
      const limit = Math.min(20_000, Math.max(1, Number(req.query.limit ?? 20_000)));
      const end = Math.min(rows.length, start + limit);
      res.json({ seq, rows: rows.slice(start, end), next: end < rows.length ? String(end) : null });
    });
    app.get(api.internal.mappingChanges.path, (req, res) => {
      this.calls.mappingChanges++;
      const after = Number(req.query.after ?? 0);
      const limit = Math.min(20_000, Math.max(1, Number(req.query.limit ?? 20_000)));
      if (after < this.prunedThrough) {
        res.json({ reset: true, seq: after, more: false, changes: [] });
        return;
      }
      const entries = this.log.filter((e) => e[0] > after);
      const page = entries.slice(0, limit);
      res.json({ reset: false, seq: page.length ? page[page.length - 1]![0] : after, more: entries.length > limit, changes: page });
    });
    app.get(api.internal.availabilityVersion.path, (req, res) => {
      this.calls.availabilityVersion++;
      res.json({ serverId: req.params.serverId, version: this.version });
    });
    app.get(api.internal.availability.path, (req, res) => {
      this.calls.availability++;
      const s = this.servers.get(req.params.serverId!);
      if (!s) {
        res.status(404).json({ error: 'unknown server', code: 'not_found', request_id: 'fake' });
        return;
      }
      res.json({ serverId: s.id, version: this.version, itemIds: [...s.tracks.keys()].filter((id) => this.songs.has(id)) });
    });
    app.post(api.internal.idsResolveInput.path, (req, res) => {
      this.calls.resolveInput++;
      const body = req.body as { serverId?: string; ids: string[] };
      const s = body.serverId ? this.servers.get(body.serverId) : undefined;
      res.json({ ids: body.ids.map((id) => s?.reverse.get(id) ?? id) });
    });
    app.post(api.internal.idsMapOutput.path, (req, res) => {
      this.calls.mapOutput++;
      const body = req.body as { serverId: string; itemIds: string[] };
      const s = this.servers.get(body.serverId);
      const map: Record<string, string> = {};
      if (s) for (const id of body.itemIds) if (s.tracks.has(id) && this.songs.has(id)) map[id] = s.tracks.get(id)!;
      res.json({ map });
    });
    // Artist links: from the provider artist ids recorded with `map` (the catalogue's artist_server_map).
    app.get(api.internal.artistsResolve.path, (req, res) => {
      this.calls.artists++;
      const s = this.servers.get(String(req.query.serverId));
      const value = String(req.query.value ?? '');
      if (s) {
        for (const [itemId, artistId] of s.artistIds) {
          if (artistId === value) {
            res.json({ artistName: this.songs.get(itemId)?.artist ?? value, providerArtistId: artistId });
            return;
          }
        }
        for (const [itemId, artistId] of s.artistIds) {
          if (this.songs.get(itemId)?.artist.toLowerCase() === value.toLowerCase()) {
            res.json({ artistName: this.songs.get(itemId)!.artist, providerArtistId: artistId });
            return;
          }
        }
      }
      res.json({ artistName: value, providerArtistId: null });
    });
    app.post(api.internal.artistsMapOutput.path, (req, res) => {
      this.calls.artists++;
      const body = req.body as { serverId: string; names: string[] };
      const s = this.servers.get(body.serverId);
      const byName = new Map<string, string>();
      if (s) for (const [itemId, artistId] of s.artistIds) {
        const name = this.songs.get(itemId)?.artist.toLowerCase();
        if (name !== undefined && (!byName.has(name) || artistId < byName.get(name)!)) byName.set(name, artistId);
      }
      const map: Record<string, string> = {};
      for (const n of body.names) {
        const id = byName.get(n.toLowerCase());
        if (id !== undefined) map[n] = id;
      }
      res.json({ map });
    });
    // The gateway's server resolution (display name or id; absent = the default server).
    app.get(api.internal.serversResolve.path, (req, res) => {
      const want = typeof req.query.server === 'string' ? req.query.server : undefined;
      const s = [...this.servers.values()].find((x) => (want === undefined ? x.isDefault : x.id === want || x.name.toLowerCase() === want.toLowerCase()));
      res.json({ server: s ? { id: s.id, name: s.name, server_type: s.type } : null });
    });
    app.get(api.internal.serverGet.path, (req, res) => {
      this.calls.server++;
      const s = this.servers.get(req.params.id!);
      if (!s) {
        res.status(404).json({ error: `Server ${req.params.id} not found`, code: 'not_found', request_id: 'fake' });
        return;
      }
      res.json({ id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: s.connection });
    });
    return app;
  }

  /** Listens on 127.0.0.1 (port 0 = any); returns the base URL. */
  async start(port = 0): Promise<string> {
    const app = this.app();
    await new Promise<void>((resolve) => {
      this.server = app.listen(port, '127.0.0.1', () => resolve());
    });
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections?.();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private ids(): string[] {
    this.sortedIds ??= [...this.songs.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sortedIds;
  }

  private mappingsOf(itemId: string): SnapshotTrack['mappings'] {
    const out: SnapshotTrack['mappings'] = [];
    for (const s of this.servers.values()) {
      const p = s.tracks.get(itemId);
      if (p) out.push({ serverId: s.id, providerId: p, artistId: s.artistIds.get(itemId) ?? null });
    }
    return out;
  }
}
