import { api } from '@polyphony/contracts';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { verifyIdentity } from '@polyphony/platform';
import type { Song } from '../src/domain/clustering.service';
import type { ServerInfo } from '../src/domain/ports';

/** A catalogue song as the fake catalogue serves it. */
export interface FakeSong extends Omit<Song, 'tags'> {
  embedding: Float32Array;
  embedderVersion: string;
  mappings: Array<{ serverId: string; providerId: string; filePath?: string }>;
}

/**
 * The registry and catalogue internal endpoints the playlist service calls, over in-memory data, on
 * one express app: GET /internal/servers[/:id], POST /internal/ids/resolve-input, POST
 * /internal/ids/map-output, GET /internal/snapshot/tracks, POST /internal/tracks/lookup. Requests must
 * carry a valid internal signature (401 otherwise). `hold()` makes snapshot pages wait until
 * `release()`, to keep a clustering run live; `lookupAvailable = false` answers the lookup with 404
 * (a catalogue without that endpoint).
 */
export class FakePeers {
  readonly app = express();
  readonly requests: Array<{ method: string; path: string; body: unknown }> = [];
  lookupAvailable = true;
  /** Users' own accounts: `${userId}:${serverId}` -> credentials (GET /internal/servers/:id/for-user). */
  readonly userAccounts = new Map<string, Record<string, string>>();
  private gate?: Promise<void>;
  private open?: () => void;
  private server?: Server;

  constructor(
    private readonly secret: string,
    public servers: ServerInfo[],
    public songs: FakeSong[],
  ) {
    const app = this.app;
    app.use(express.json({ limit: '50mb' }));
    app.use((req, res, next) => {
      this.requests.push({ method: req.method, path: req.path, body: req.body });
      const identity = verifyIdentity(req.headers, this.secret);
      if (!identity || identity.via !== 'internal') {
        res.status(401).json({ error: 'bad signature', code: 'unauthorized', request_id: 'fake' });
        return;
      }
      next();
    });
    app.get(api.internal.serversList.path, (_req, res) => {
      res.json({ servers: this.servers });
    });
    app.get(api.internal.serverGet.path, (req, res) => {
      const s = this.servers.find((x) => x.id === req.params.id || x.name === req.params.id);
      if (!s) res.status(404).json({ error: 'no such server', code: 'not_found', request_id: 'fake' });
      else res.json(s);
    });
    app.get(api.accountsInternal.serverForUser.path, (req, res) => {
      const s = this.servers.find((x) => x.id === req.params.id || x.name === req.params.id);
      if (!s) {
        res.status(404).json({ error: 'no such server', code: 'not_found', request_id: 'fake' });
        return;
      }
      const own = typeof req.query.userId === 'string' ? this.userAccounts.get(`${req.query.userId}:${s.id}`) : undefined;
      res.json(own ? { ...s, account: 'user', connection: { ...s.connection, creds: own } } : { ...s, account: 'server' });
    });
    app.post(api.internal.idsResolveInput.path, (req, res) => {
      const { serverId, ids } = req.body as { serverId?: string; ids: string[] };
      res.json({ ids: ids.map((id) => this.songs.find((s) => s.mappings.some((m) => m.serverId === serverId && m.providerId === id))?.itemId ?? id) });
    });
    app.post(api.internal.idsMapOutput.path, (req, res) => {
      const { serverId, itemIds } = req.body as { serverId: string; itemIds: string[] };
      const map: Record<string, string> = {};
      for (const id of itemIds) {
        const ids = this.songs
          .find((s) => s.itemId === id)
          ?.mappings.filter((m) => m.serverId === serverId)
          .map((m) => m.providerId)
          .sort();
        if (ids?.length) map[id] = ids[0]!;
      }
      res.json({ map });
    });
    app.get(api.internal.snapshotTracks.path, async (req, res) => {
      if (this.gate) await this.gate;
      const after = typeof req.query.after === 'string' ? req.query.after : '';
      const limit = Number(req.query.limit ?? 1000);
      const sorted = [...this.songs].sort((a, b) => (a.itemId < b.itemId ? -1 : 1)).filter((s) => s.itemId > after);
      const page = sorted.slice(0, limit);
      res.json({
        tracks: page.map((s) => ({
          itemId: s.itemId,
          embedding: Buffer.from(s.embedding.buffer, s.embedding.byteOffset, s.embedding.byteLength).toString('base64'),
          embedderVersion: s.embedderVersion,
          title: s.title,
          artist: s.artist,
          album: null,
          albumArtist: null,
          year: null,
          rating: null,
          durationSeconds: null,
          tempo: s.tempo,
          key: s.key,
          scale: s.scale,
          energy: s.energy,
          mappings: s.mappings.map((m) => ({ serverId: m.serverId, providerId: m.providerId, artistId: null })),
        })),
        next: sorted.length > limit ? page[page.length - 1]!.itemId : null,
      });
    });
    app.post(api.internal.tracksLookup.path, (req, res) => {
      if (!this.lookupAvailable) {
        res.status(404).json({ error: 'No route', code: 'not_found', request_id: 'fake' });
        return;
      }
      const { itemIds } = req.body as { itemIds: string[] };
      res.json({
        tracks: this.songs
          .filter((s) => itemIds.includes(s.itemId))
          .map((s) => ({ itemId: s.itemId, title: s.title, artist: s.artist, mappings: s.mappings.map((m) => ({ serverId: m.serverId, providerId: m.providerId, filePath: m.filePath ?? null })) })),
      });
    });
  }

  /** Snapshot pages wait from now until {@link release}. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async start(): Promise<string> {
    this.server = this.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => this.server!.once('listening', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async close(): Promise<void> {
    this.release();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
