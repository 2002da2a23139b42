import type { ServerTaskCounts } from '@polyphony/contracts';
import { isMediaServerError, type MediaServerClient } from '@polyphony/media-servers';
import { nameClusterWithLlm, type LlmProvider } from '@polyphony/llm';
import { leaseOwnerName, TaskHost, type Bus, type Logger, type Metrics, type TaskContext, type TaskEnd, type TaskRun, type TaskRunStore } from '@polyphony/platform';
import { profileCluster, topClusterTags, uniqueNames, type ClusterProfile } from './cluster-naming';
import { reduceWithPca, searchClustering, type SongLabels } from './cluster-algorithms';
import { chooseK, type ClusteringParams } from './clustering-params';
import { decodeEmbedding, type KMeansOptions, KMeansStoppedError, normaliseInPlace } from '@polyphony/vectors';
import type { CataloguePort, MediaClientFactory, PlaylistStore, RegistryPort, ServerInfo, WrittenTrack } from './ports';

/** Suffix of every playlist a clustering run writes (reference implementation naming). */
export const AUTOMATIC_SUFFIX = '_automatic';
/** Task type reported to callers of POST /api/clustering/start (reference implementation name). */
export const CLUSTERING_TASK_TYPE = 'main_clustering';

export interface ClusteringOptions {
  /** Least time between two progress snapshots inside a phase, ms (default 500). */
  progressIntervalMs?: number;
  /** Catalogue snapshot page size (default 1000). */
  pageSize?: number;
  /** k-means tuning (iterations, restarts, training sample). */
  kmeans?: Pick<KMeansOptions, 'maxIterations' | 'restarts' | 'trainingSample'>;
  /** Lease time-to-live of the run's coordinator, ms (default the platform's 60 s). */
  leaseTtlMs?: number;
  /** How often this replica looks for runs whose coordinator lease expired, ms (default 5000). */
  scanMs?: number;
}

/** What one server's part of a run did; published in the task's `details.clustering`. */
export interface ServerClusteringReport {
  serverId: string;
  serverName: string;
  status: 'pending' | 'running' | 'done' | 'skipped' | 'failed' | 'cancelled';
  /** Songs in the server's availability-scoped set that were clustered. */
  songs: number;
  /** Songs mapped on the server left out (no usable embedding, or another embedder version). */
  songsIgnored: number;
  clusters: number;
  playlistsDeleted: number;
  playlistsCreated: number;
  tracksWritten: number;
  /** Cluster members the output mapping no longer found on the server (dropped, never sent). */
  tracksUnavailable: number;
  /** Names written (without the suffix). */
  playlists: string[];
  /** Songs written per playlist, in the order of `playlists`. */
  playlistSizes: number[];
  /** Algorithm and parameters chosen by the search, its score (purity + 2 x diversity) and candidates tried. */
  algorithm?: string;
  parameters?: Record<string, number>;
  score?: number;
  candidatesTried?: number;
  /** Where the names came from: the configured LLM, or tags and descriptors. */
  naming?: 'llm' | 'descriptors';
  error?: string;
}

/** A song of the server's set, as clustering uses it. */
export interface Song {
  itemId: string;
  title: string;
  artist: string;
  tempo: number | null;
  key: string | null;
  scale: string | null;
  energy: number | null;
  /** MSD tag probabilities (learned model), or null when the song has none. */
  tags: number[] | null;
}

/** A cluster turned into a playlist plan. */
interface PlannedPlaylist {
  name: string;
  profile: ClusterProfile;
  /** Members nearest to the centroid first, capped at maxSongsPerPlaylist. */
  members: Song[];
}

type ServerOutcome = 'done' | 'skipped' | 'cancelled';

/** Working state of the run coordinated here (rebuilt from the row by `begin` on a takeover). */
interface ClusteringWork {
  params: ClusteringParams;
  /** The servers in run order, default first; undefined until the first step read the registry. */
  servers?: ServerInfo[];
  counts: ServerTaskCounts[];
  reports: ServerClusteringReport[];
}

const finishedReport = (r: ServerClusteringReport) => r.status === 'done' || r.status === 'skipped' || r.status === 'failed';

/**
 * The clustering task (spec: Batch tasks 1-3). One run at a time; it goes over every configured server
 * in sequence, default first, and completes the whole pipeline for a server before the next begins:
 * 1. the server's availability-scoped song set: catalogue snapshot songs that have a mapping row on
 *    that server, with their embeddings (the majority embedder version only, so vectors are comparable);
 * 2. k-means++ / Lloyd k-means over the unit-normalised embeddings (angular geometry);
 * 3. each cluster named from its dominant descriptors (tempo band, scale, energy level), no AI naming;
 * 4. the canonical ids of the members translated by the catalogue's output mapping to the server's
 *    provider ids (members no longer on the server are dropped, never sent);
 * 5. this service's previous `_automatic` playlists on that server deleted, found from our own records
 *    (a user's playlists are never looked at, whatever their name), then the new `<name>_automatic`
 *    playlists created and recorded.
 * A server that fails is isolated and reported; the run continues.
 *
 * Lifecycle: the platform task host over `playlist.clustering_runs` (the same host as analysis runs);
 * this class is its executor: one step reads the servers, then one step per server. The row is the one
 * source of the task board: every snapshot is written through the host (fenced by the coordinator's
 * lease) and published from the row. When the coordinator dies or hands the lease back on SIGTERM
 * another replica takes the run over and resumes from the per-server reports stored in
 * `details.clustering` (servers done, skipped or failed are not redone; the one in progress is
 * clustered again, which replaces its playlists). Cancel (`task.cancel.requested.v1`) ends the run as
 * REVOKED in the database at once, whatever state its coordinator is in; the coordinator stops at its
 * next check (between pages, k-means iterations, servers and playlists); playlists written so far are
 * kept and recorded.
 */
export class ClusteringService {
  private readonly progressIntervalMs: number;
  private readonly pageSize: number;
  /** Starts runs, takes over runs whose coordinator died, cancels, hands leases back on stop. */
  readonly host: TaskHost<ClusteringWork>;

  constructor(
    /** The task-run table `playlist.clustering_runs` (store: ClusteringRunRepository.tasks). */
    runs: TaskRunStore,
    private readonly playlists: PlaylistStore,
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly clientFactory: MediaClientFactory,
    bus: Bus,
    private readonly logger: Logger,
    metrics?: Metrics,
    private readonly options: ClusteringOptions = {},
    /** The configured LLM for playlist names, or null (descriptor names); read once per server. */
    private readonly namer?: () => Promise<LlmProvider | null>,
  ) {
    this.progressIntervalMs = options.progressIntervalMs ?? 500;
    this.pageSize = options.pageSize ?? 1000;
    this.host = new TaskHost<ClusteringWork>(
      runs,
      leaseOwnerName('playlist-clustering'),
      { start: (ctx) => this.begin(ctx), step: (work, ctx) => this.step(work, ctx) },
      logger,
      { bus, type: 'clustering', owner: 'playlist', metrics: metrics && { metrics, task: 'clustering' } },
      { ttlMs: options.leaseTtlMs, scanMs: options.scanMs, requestIdPrefix: 'clustering', cancelMessage: 'Cancelled; playlists written so far are kept' },
    );
  }

  /**
   * Starts a run in the background and returns its record at once (the caller answers 202).
   * @throws ConflictError (409, code task_already_running) while another run is live.
   */
  async start(params: ClusteringParams): Promise<TaskRun> {
    return this.host.start({ task_type: CLUSTERING_TASK_TYPE, params });
  }

  /** Starts looking for runs whose coordinator lease expired (service start). */
  startScanning(): void {
    this.host.startScanning();
  }

  /** Process shutdown: the run coordinated here stops at its next check and hands its lease back (another replica resumes it). */
  async shutdown(): Promise<void> {
    await this.host.stop();
  }

  /** Resolves when no run is coordinated by this process; for tests and graceful shutdown. */
  async idle(): Promise<void> {
    await this.host.idle();
  }

  /** Ends a live run as REVOKED at once (idempotent; unknown or finished runs are ignored). */
  async cancel(taskId: string): Promise<void> {
    await this.host.cancel(taskId);
  }

  private details(work: ClusteringWork): Record<string, unknown> {
    return { task_type: CLUSTERING_TASK_TYPE, clustering: work.reports, params: work.params };
  }

  /** Fenced snapshot (RUNNING) then publish; throws LeaseLostError when the run was cancelled or taken over. */
  private async publish(work: ClusteringWork, ctx: TaskContext, progress: number, message: string): Promise<void> {
    await ctx.report({ message, progress, servers: work.counts, details: this.details(work) });
  }

  /** Executor `start`: the working state of a new run, or of one taken over from a replica that stopped. */
  private async begin(ctx: TaskContext): Promise<ClusteringWork> {
    const d = ctx.run.details as { params?: ClusteringParams; clustering?: ServerClusteringReport[] };
    if (!d.params) throw new Error(`clustering run ${ctx.run.id} has no parameters`);
    return { params: d.params, counts: ctx.run.servers, reports: d.clustering ?? [] };
  }

  /** Executor `step`: reads the servers first, then clusters the next server not finished, then ends the run. */
  private async step(work: ClusteringWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    if (!work.servers) return this.readServers(work, ctx);
    const servers = work.servers;
    const i = work.reports.findIndex((r) => !finishedReport(r));
    if (i >= 0) {
      await this.runServer(work, ctx, servers[i]!, i);
      return undefined;
    }
    const failed = work.reports.filter((r) => r.status === 'failed').length;
    const allFailed = servers.length > 0 && failed === servers.length;
    const created = work.reports.reduce((a, r) => a + r.playlistsCreated, 0);
    return { state: allFailed ? 'FAIL' : 'SUCCESS', message: `${allFailed ? 'All servers failed' : 'Done'}: ${created} playlist(s) created${failed ? `, ${failed} server(s) failed` : ''}`, servers: work.counts, details: this.details(work) };
  }

  /** The run's servers, default first; per-server reports of an earlier coordinator (takeover) are kept. */
  private async readServers(work: ClusteringWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    let servers: ServerInfo[];
    try {
      servers = await this.registry.listServers();
    } catch (err) {
      if (await ctx.stopped()) return undefined;
      ctx.note(`cannot read the server registry: ${(err as Error).message}`);
      return { state: 'FAIL', message: 'Cannot read the server registry', servers: work.counts, details: this.details(work) };
    }
    // Default first, the others in registry order (Array.prototype.sort is stable).
    servers = [...servers].sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
    // Reports stored by an earlier coordinator of this run (takeover) are kept: they are its durable results.
    const earlier = new Map(work.reports.map((r) => [r.serverId, r]));
    const earlierCounts = new Map(work.counts.map((c) => [c.serverId, c]));
    work.servers = servers;
    work.counts = servers.map((s) => earlierCounts.get(s.id) ?? { serverId: s.id, serverName: s.name, seen: 0, skippedMapped: 0, mappedExisting: 0, analyzed: 0, failed: 0, status: 'pending' });
    work.reports = servers.map(
      (s) =>
        earlier.get(s.id) ?? {
          serverId: s.id,
          serverName: s.name,
          status: 'pending',
          songs: 0,
          songsIgnored: 0,
          clusters: 0,
          playlistsDeleted: 0,
          playlistsCreated: 0,
          tracksWritten: 0,
          tracksUnavailable: 0,
          playlists: [],
          playlistSizes: [],
        },
    );
    await this.publish(work, ctx, (100 * work.reports.filter(finishedReport).length) / Math.max(1, servers.length), servers.length ? `Clustering ${servers.length} server(s)` : 'No servers configured');
    return undefined;
  }

  /** Clusters server `i` of the run; a failure is recorded on its report. Returns early (nothing recorded) when the run must stop. */
  private async runServer(work: ClusteringWork, ctx: TaskContext, server: ServerInfo, i: number): Promise<void> {
    const servers = work.servers!;
    const report = work.reports[i]!;
    const counts = work.counts[i]!;
    report.status = counts.status = 'running';
    ctx.note(`server ${server.name}: started`);
    let last = 0;
    const progress = async (fraction: number, force = false) => {
      if (!force && Date.now() - last < this.progressIntervalMs) return;
      last = Date.now();
      counts.seen = report.songs;
      await this.publish(work, ctx, Math.min(99, ((i + Math.min(1, fraction)) / servers.length) * 100), `${server.name}: ${phaseText(report)}`);
    };
    await progress(0, true);
    try {
      const outcome = await this.clusterServer(work, ctx, server, report, progress);
      if (outcome === 'cancelled') return;
      report.status = outcome;
    } catch (err) {
      if (err instanceof KMeansStoppedError || (await ctx.stopped())) return;
      report.status = 'failed';
      report.error = (err as Error).message.slice(0, 300);
      counts.error = report.error;
    }
    counts.status = report.status;
    counts.seen = report.songs;
    ctx.note(
      `server ${server.name}: ${report.status}${report.error ? ` (${report.error})` : ''}; ${report.songs} songs, ${report.clusters} clusters, ` +
        `${report.playlistsDeleted} old playlists deleted, ${report.playlistsCreated} created, ${report.tracksWritten} tracks written, ${report.tracksUnavailable} unavailable`,
    );
    await progress(1, true);
  }

  /** The whole pipeline for one server; throws on a server failure (isolated by the caller). */
  private async clusterServer(work: ClusteringWork, ctx: TaskContext, server: ServerInfo, report: ServerClusteringReport, progress: (fraction: number, force?: boolean) => Promise<void>): Promise<ServerOutcome> {
    const { params } = work;
    const taskId = ctx.run.id;
    const loaded = await this.loadSongs(ctx, server.id, report);
    if (loaded === 'cancelled') return 'cancelled';
    const { songs, vectors, dimensions } = loaded;
    report.songs = songs.length;
    await progress(0.1, true);
    if (songs.length < 2 || songs.length < params.minSongsPerPlaylist) {
      ctx.note(`server ${server.name}: ${songs.length} song(s) with embeddings, too few to cluster; its playlists are left as they are`);
      return 'skipped';
    }

    const reduced = reduceWithPca(vectors, songs.length, dimensions, params.pcaComponents);
    const labels: SongLabels[] = songs.map((song) => ({ topTag: argmax(song.tags), profile: profileCluster([song]).name }));
    const maxIterations = this.options.kmeans?.maxIterations ?? 50;
    const shouldStop = () => ctx.stopped();
    const { best, score, tried } = await searchClustering(reduced.vectors, songs.length, reduced.dim, labels, {
      algorithm: params.algorithm,
      k: params.numClusters !== undefined ? chooseK(songs.length, params) : undefined,
      minK: Math.min(songs.length, params.minClusters),
      maxK: chooseK(songs.length, { ...params, maxClusters: Math.min(params.maxClusters, Math.max(params.minClusters, Math.round(Math.sqrt(songs.length) * 2))) }),
      eps: params.dbscanEps,
      minSamples: params.dbscanMinSamples,
      maxRuns: params.searchRuns,
      seed: params.seed,
      shouldStop,
      kmeans: { maxIterations, restarts: this.options.kmeans?.restarts, trainingSample: this.options.kmeans?.trainingSample, shouldStop },
    });
    if (await ctx.stopped()) return 'cancelled';
    await progress(0.6, true);
    const k = best.k;
    const result = best;
    report.clusters = k;
    report.algorithm = best.algorithm;
    report.parameters = best.params;
    report.score = Math.round(score * 1000) / 1000;
    report.candidatesTried = tried;
    ctx.note(`server ${server.name}: ${best.algorithm} ${JSON.stringify(best.params)} chosen from ${tried} candidate(s), score ${report.score}`);

    const plans = await this.plan(songs, result.assignments, result.distances, k, params, report);
    await progress(0.65, true);

    // Output mapping, the single translation point: canonical ids -> this server's provider ids.
    const providerIds = await this.catalogue.mapOutput(server.id, plans.flatMap((p) => p.members.map((s) => s.itemId)));
    const writes = plans.map((p) => {
      const tracks: WrittenTrack[] = [];
      for (const s of p.members) {
        const providerId = providerIds.get(s.itemId);
        if (providerId === undefined) report.tracksUnavailable++;
        else tracks.push({ itemId: s.itemId, providerId, title: s.title, author: s.artist });
      }
      return { name: `${p.name}${AUTOMATIC_SUFFIX}`, baseName: p.name, tracks };
    });

    if (await ctx.stopped()) return 'cancelled';
    const client = this.clientFactory(server.connection);
    // Only playlists recorded as OURS are deleted; user playlists are never listed or matched by name.
    for (const old of await this.playlists.listByServerAndKind(server.id, 'automatic')) {
      await deletePlaylistOnServer(client, old.providerPlaylistId);
      await this.playlists.remove(old.id);
      report.playlistsDeleted++;
    }
    await progress(0.7, true);

    const toWrite = writes.filter((w) => w.tracks.length > 0);
    for (let j = 0; j < toWrite.length; j++) {
      if (await ctx.stopped()) return 'cancelled';
      const w = toWrite[j]!;
      const created = await client.createPlaylist(w.name, w.tracks.map((t) => t.providerId));
      await this.playlists.record({ serverId: server.id, providerPlaylistId: created.id, name: w.name, kind: 'automatic', runId: taskId, tracks: w.tracks });
      report.playlistsCreated++;
      report.tracksWritten += w.tracks.length;
      report.playlists.push(w.baseName);
      report.playlistSizes.push(w.tracks.length);
      await progress(0.7 + (0.3 * (j + 1)) / toWrite.length);
    }
    return 'done';
  }

  /**
   * The server's availability-scoped song set from the catalogue snapshot: songs with a mapping row on
   * the server and a usable embedding of the majority embedder version, sorted by canonical id (so the
   * clustering is deterministic), packed row-major into one Float32Array of unit vectors.
   */
  private async loadSongs(ctx: TaskContext, serverId: string, report: ServerClusteringReport): Promise<'cancelled' | { songs: Song[]; vectors: Float32Array; dimensions: number }> {
    const byVersion = new Map<string, Array<{ song: Song; vector: Float32Array }>>();
    let mapped = 0;
    for await (const page of this.catalogue.snapshotPages(this.pageSize)) {
      if (await ctx.stopped()) return 'cancelled';
      for (const t of page) {
        if (!t.mappings.some((m) => m.serverId === serverId)) continue;
        mapped++;
        const vector = decodeEmbedding(t.embedding);
        if (!vector || !normaliseInPlace(vector)) continue;
        const key = `${t.embedderVersion}\u0000${vector.length}`;
        let group = byVersion.get(key);
        if (!group) byVersion.set(key, (group = []));
        group.push({
          song: { itemId: t.itemId, title: t.title, artist: t.artist, tempo: t.tempo, key: t.key, scale: t.scale, energy: t.energy, tags: t.learned?.tags.msd ?? null },
          vector,
        });
      }
    }
    // Vectors of different embedders are not comparable: keep the largest group (ties: the later version name).
    let chosen: Array<{ song: Song; vector: Float32Array }> = [];
    let chosenKey = '';
    for (const [key, group] of byVersion) {
      if (group.length > chosen.length || (group.length === chosen.length && key > chosenKey)) {
        chosen = group;
        chosenKey = key;
      }
    }
    byVersion.clear();
    report.songsIgnored = mapped - chosen.length;
    chosen.sort((a, b) => (a.song.itemId < b.song.itemId ? -1 : a.song.itemId > b.song.itemId ? 1 : 0));
    const dimensions = chosen[0]?.vector.length ?? 0;
    const vectors = new Float32Array(chosen.length * dimensions);
    chosen.forEach((c, i) => vectors.set(c.vector, i * dimensions));
    return { songs: chosen.map((c) => c.song), vectors, dimensions };
  }

  /**
   * Playlist plans from a clustering: clusters below minSongsPerPlaylist are dropped, the rest ordered
   * by size (largest first, then cluster index), cut to topN, named, and their members ordered nearest
   * to the centroid first and capped at maxSongsPerPlaylist.
   */
  private async plan(songs: Song[], assignments: Int32Array, distances: Float64Array, k: number, params: ClusteringParams, report: ServerClusteringReport): Promise<PlannedPlaylist[]> {
    const members: number[][] = Array.from({ length: k }, () => []);
    // DBSCAN noise (-1) joins no playlist.
    for (let i = 0; i < songs.length; i++) if (assignments[i]! >= 0) members[assignments[i]!]!.push(i);
    let clusters = members
      .map((idx, c) => ({ c, idx }))
      .filter((x) => x.idx.length >= params.minSongsPerPlaylist)
      .sort((a, b) => b.idx.length - a.idx.length || a.c - b.c);
    if (params.topN !== undefined) clusters = clusters.slice(0, params.topN);
    const profiles = clusters.map((x) => {
      const list = x.idx.map((i) => songs[i]!);
      return profileCluster(list, topClusterTags(list.map((s) => s.tags)));
    });
    const ordered = clusters.map((x) => [...x.idx].sort((a, b) => distances[a]! - distances[b]! || a - b).slice(0, params.maxSongsPerPlaylist));
    let names = uniqueNames(profiles);
    report.naming = 'descriptors';
    const llm = await this.namer?.();
    if (llm) {
      const taken = new Set<string>();
      const fromModel: Array<string | null> = [];
      for (let j = 0; j < clusters.length; j++) {
        let name: string | null = null;
        try {
          name = j < MAX_LLM_NAMED_CLUSTERS ? await nameClusterWithLlm(llm, { tags: profiles[j]!.tags, tempo: profiles[j]!.tempo, energy: profiles[j]!.energy, songs: ordered[j]!.slice(0, 25).map((i) => `${songs[i]!.title} - ${songs[i]!.artist}`) }, taken) : null;
        } catch (err) {
          this.logger.warn('cluster naming by the model failed; descriptor name kept', { error: (err as Error).message });
        }
        if (name) taken.add(name.toLowerCase());
        fromModel.push(name);
      }
      if (fromModel.some(Boolean)) {
        report.naming = 'llm';
        names = names.map((fallback, j) => fromModel[j] ?? (taken.has(fallback.toLowerCase()) ? `${fallback}_${j + 1}` : fallback));
      }
    }
    return clusters.map((_x, j) => ({ name: names[j]!, profile: profiles[j]!, members: ordered[j]!.map((i) => songs[i]!) }));
  }
}

/** At most this many clusters per server are named by the model (one request each); the rest keep descriptor names. */
export const MAX_LLM_NAMED_CLUSTERS = 30;

/** Index of the largest value, or -1 for no values. */
function argmax(values: number[] | null): number {
  if (!values?.length) return -1;
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Deletes a playlist on its server; one already gone (404 / Subsonic code 70) counts as deleted. */
export async function deletePlaylistOnServer(client: MediaServerClient, providerPlaylistId: string): Promise<void> {
  try {
    await client.deletePlaylist(providerPlaylistId);
  } catch (err) {
    if (isMediaServerError(err) && err.kind === 'not_found') return;
    throw err;
  }
}

function phaseText(r: ServerClusteringReport): string {
  if (r.playlistsCreated || r.playlistsDeleted) return `${r.playlistsCreated} playlist(s) created, ${r.playlistsDeleted} old one(s) deleted`;
  if (r.clusters) return `${r.songs} songs in ${r.clusters} clusters`;
  if (r.songs) return `${r.songs} songs loaded`;
  return 'loading songs';
}
