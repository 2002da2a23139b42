/**
 * Saved alchemy (issue 14 "Alchemy anchors and radios"): anchors (named points of the embedding space
 * with exclusions) and radios (an anchor + n_results + temperature, run into one playlist per server).
 * Rules: shared/contracts/src/anchors.ts; operations: docs/architecture.md "Anchors and radios".
 */
import {
  ALCHEMY_MAX_ANCHOR_POINTS,
  ANCHOR_MAX_EXCLUSION_VECTORS,
  RADIO_SUFFIX,
  RoutingKeys,
  SERVICE_DEFAULTS,
  type AlchemyItem,
  type AnchorCreateBody,
  type AnchorDto,
  type RadioCreateBody,
  type RadioDto,
  type RadioPlaylistResponse,
  type RadioRunSummary,
} from '@polyphony/contracts';
import {
  AppError,
  ConflictError,
  NotFoundError,
  ValidationError,
  isTerminal,
  toTaskEvent,
  type Bus,
  type LeaseKeeper,
  type Logger,
  type TaskRun,
  type TaskRunHost,
  type TaskRunStore,
} from '@polyphony/platform';
import type { SavedAlchemyStore, StoredAnchor, StoredExclusion, StoredRadio } from './ports';
import { AlchemyService } from './alchemy.service';
import type { Generation, IndexState } from '../core/generation';
import { normaliseInto } from '@polyphony/vectors';
import type { NamedAnchor } from '../core/ports';
import { RequestScope, type ScopeDeps } from '../core/scope';

/** Default radius of an anchor's SUBTRACT items (reference ALCHEMY_SUBTRACT_DISTANCE_ANGULAR). */
export const ANCHOR_DEFAULT_SUBTRACT_DISTANCE = SERVICE_DEFAULTS.alchemySubtractDistanceAngular;
/** Radio defaults (reference ALCHEMY_TEMPERATURE, ALCHEMY_DEFAULT_N_RESULTS). */
export const RADIO_DEFAULT_TEMPERATURE = SERVICE_DEFAULTS.alchemyTemperature;
export const RADIO_DEFAULT_N = SERVICE_DEFAULTS.alchemyDefaultN;
/** How long POST /api/radios/run waits for its run before answering 202 (the Lyrion plugin gives up at 180 s). */
export const RADIO_RUN_WAIT_MS = 170_000;

function unit(v: ArrayLike<number>): Float32Array | undefined {
  const src = Float32Array.from(v);
  const out = new Float32Array(src.length);
  return normaliseInto(src, 0, out, 0, src.length) > 0 ? out : undefined;
}

function toAnchorDto(a: StoredAnchor): AnchorDto {
  return {
    id: a.id,
    name: a.name,
    points: a.items ? a.items.filter((i) => i.op === 'ADD').length : 0,
    exclusions: a.exclusions.length,
    items: a.items,
    dim: a.dim,
    created_by: a.createdBy,
    created_at: a.createdAt.toISOString(),
    embedder_version: a.embedderVersion,
  };
}

/** Saved anchors: CRUD, and the anchor seed of alchemy, find_path and similar_tracks. */
export class AnchorService {
  constructor(
    private readonly repo: SavedAlchemyStore,
    private readonly alchemy: AlchemyService,
  ) {}

  async list(): Promise<AnchorDto[]> {
    return (await this.repo.listAnchors()).map(toAnchorDto);
  }

  /** @throws NotFoundError */
  async get(id: number): Promise<AnchorDto> {
    const a = await this.repo.findAnchor(id);
    if (!a) throw new NotFoundError(`Anchor ${id} not found`);
    return toAnchorDto(a);
  }

  /**
   * Saves an anchor. From `items` (resolved on the selected server): the centroid is the normalised mean of
   * the ADD points (songs, artists' centroids, moods, playlists, anchors; at most 16), the exclusions are
   * every SUBTRACT song (an artist or playlist counts as each of its songs, a mood or anchor as its point)
   * with radius `subtract_distance` (default 0.2), plus the exclusions of ADD anchors; at most 500 vectors
   * are kept. From `centroid`: it must have the index's dimension and is normalised, as are exclusion vectors.
   * @throws ValidationError (400) for a vector of the wrong dimension or a zero vector; NotFoundError (404)
   *   when none of the ADD items is in the index; ConflictError (409) for a taken name
   */
  async create(scope: RequestScope, body: AnchorCreateBody, createdBy: string | null): Promise<AnchorDto & { unresolved: string[] }> {
    const dim = scope.gen.index.dim;
    if (body.centroid) {
      if (scope.gen.index.size === 0) throw new ConflictError('No index generation is built yet: analyze the library first');
      if (body.centroid.length !== dim) throw new ValidationError(`centroid must have ${dim} numbers (the index's embedding dimension), not ${body.centroid.length}`);
      const centroid = unit(body.centroid);
      if (!centroid) throw new ValidationError('centroid must not be the zero vector');
      const exclusions: StoredExclusion[] = [];
      for (const e of body.exclusions ?? []) {
        if (e.vector.length !== dim) throw new ValidationError(`Each exclusion vector must have ${dim} numbers, not ${e.vector.length}`);
        const v = unit(e.vector);
        if (!v) throw new ValidationError('An exclusion vector must not be the zero vector');
        exclusions.push({ vector: Array.from(v), distance: e.distance ?? null });
      }
      const saved = await this.repo.insertAnchor({ name: body.name, centroid, exclusions, items: null, createdBy, embedderVersion: scope.gen.embedderVersion });
      return { ...toAnchorDto(saved), unresolved: [] };
    }
    const items = body.items!;
    const { add, sub, unresolved, exclusions: carried } = await this.alchemy.resolvePoints(scope, items);
    if (add.length === 0) throw new NotFoundError('None of the ADD items is in the index');
    if (add.length > ALCHEMY_MAX_ANCHOR_POINTS) throw new ValidationError(`An anchor has at most ${ALCHEMY_MAX_ANCHOR_POINTS} anchor points`);
    const centroid = AlchemyService.centroidOf(add, dim);
    const radius = body.subtract_distance ?? ANCHOR_DEFAULT_SUBTRACT_DISTANCE;
    const exclusions: StoredExclusion[] = [];
    for (const s of sub) for (const v of AlchemyService.subtractVectors(scope, s)) exclusions.push({ vector: Array.from(v), distance: radius });
    for (const e of carried) exclusions.push({ vector: Array.from(e.vector), distance: e.distance });
    // The recipe as it can be re-read later: songs by canonical id (provider ids differ per server).
    const recipe = [...add, ...sub].map((p) => ({ id: p.input.type === 'song' ? scope.idOf(p.rows[0]!) : p.input.id, op: p.input.op, type: p.input.type }));
    const saved = await this.repo.insertAnchor({ name: body.name, centroid, exclusions: exclusions.slice(0, ANCHOR_MAX_EXCLUSION_VECTORS), items: recipe, createdBy, embedderVersion: scope.gen.embedderVersion });
    return { ...toAnchorDto(saved), unresolved };
  }

  /** @throws NotFoundError, ConflictError (taken name) */
  async rename(id: number, name: string): Promise<AnchorDto> {
    const a = await this.repo.renameAnchor(id, name);
    if (!a) throw new NotFoundError(`Anchor ${id} not found`);
    return toAnchorDto(a);
  }

  /** Deletes an anchor and its radio. @throws NotFoundError */
  async remove(id: number): Promise<void> {
    if (!(await this.repo.deleteAnchor(id))) throw new NotFoundError(`Anchor ${id} not found`);
  }

  /**
   * An anchor as a seed, by id or (case-insensitive) name.
   * @throws NotFoundError (404) when unknown; ConflictError (409) `anchor_dimension_mismatch` when saved for another
   *   embedding dimension, `embedder_version_mismatch` when saved against another embedder's vectors (the catalogue
   *   switched embedders since: its centroid and exclusions are points of the old space; save it again)
   */
  async seed(idOrName: string, gen: Generation): Promise<NamedAnchor> {
    const key = idOrName.trim();
    // A NUL cannot be in a stored name (PostgreSQL text refuses it): unknown, not a database error.
    if (key.includes('\u0000')) throw new NotFoundError('Anchor not found');
    const a = /^\d{1,9}$/.test(key) ? await this.repo.findAnchor(Number(key)) : await this.repo.findAnchorByName(key);
    if (!a) throw new NotFoundError(`Anchor ${JSON.stringify(key)} not found`);
    if (a.dim !== gen.index.dim) throw new ConflictError(`Anchor "${a.name}" was saved in a ${a.dim}-dimensional embedding space, the index now has ${gen.index.dim}: save it again`, 'anchor_dimension_mismatch');
    if (a.embedderVersion && gen.embedderVersion && a.embedderVersion !== gen.embedderVersion)
      throw new ConflictError(
        `Anchor "${a.name}" was saved against ${a.embedderVersion} vectors; the library is now analysed with ${gen.embedderVersion}, whose space it does not belong to: save it again from its songs`,
        'embedder_version_mismatch',
      );
    return { id: a.id, name: a.name, vector: a.centroid, exclusions: a.exclusions.map((e) => ({ vector: Float32Array.from(e.vector), distance: e.distance })) };
  }
}

/** A configured media server as the radio run needs it. */
export interface RadioServer {
  id: string;
  name: string;
}

/** What a radio run needs from its peers. */
export interface RadioPeers {
  /** Every configured server (registry GET /internal/servers). */
  listServers(): Promise<RadioServer[]>;
  /** Replaces `<name>_radio` on one server with these tracks (playlist POST /internal/playlists/radio). */
  replaceRadio(serverId: string, name: string, ids: string[], runId: string): Promise<RadioPlaylistResponse>;
}

function toRadioDto(r: StoredRadio): RadioDto {
  return { id: r.id, anchor_id: r.anchorId, name: r.name, temperature: r.temperature, n_results: r.nResults, enabled: r.enabled, playlist_name: `${r.name}${RADIO_SUFFIX}` };
}

interface RunDetails {
  /** `<radio id>@<server id>` of every playlist handled (written or failed), so a resumed run skips them. */
  done: string[];
  created: number;
  failed: string[];
  radios_enabled: number;
  servers_enabled: number;
  [k: string]: unknown;
}

/**
 * Radios: CRUD, and the run (task type `radios`, owner index, platform task-run module over
 * `index.radio_runs`): for every configured server and every enabled radio, alchemy with the radio's
 * anchor as the single ADD item, its n_results and temperature, on that server's songs; the result
 * replaces the playlist `<anchor name>_radio` written there by an earlier run (the playlist service
 * deletes only playlists it recorded as radios). One run at a time (409). A run whose coordinator died
 * is taken over by another replica and skips the (radio, server) pairs already handled.
 */
export class RadioService {
  constructor(
    private readonly repo: SavedAlchemyStore,
    private readonly anchors: AnchorService,
    private readonly alchemy: AlchemyService,
    private readonly state: IndexState,
    private readonly scopeDeps: ScopeDeps,
    private readonly peers: RadioPeers,
    readonly store: TaskRunStore,
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  /** Set by the composition root (the host calls back into `execute`). */
  host?: TaskRunHost;

  async list(): Promise<RadioDto[]> {
    return (await this.repo.listRadios()).map(toRadioDto);
  }

  /**
   * Saves a radio on an anchor, or on a new recipe (its anchor is saved first under the radio's name).
   * @throws NotFoundError (unknown anchor), ConflictError (the anchor has a radio; taken name)
   */
  async create(scope: RequestScope, body: RadioCreateBody, createdBy: string | null): Promise<RadioDto> {
    let anchorId = body.anchor_id;
    if (anchorId === undefined) anchorId = (await this.anchors.create(scope, { name: body.name!, items: body.items as AlchemyItem[] }, createdBy)).id;
    else if (!(await this.repo.findAnchor(anchorId))) throw new NotFoundError(`Anchor ${anchorId} not found`);
    const r = await this.repo.insertRadio({ anchorId, temperature: body.temperature ?? RADIO_DEFAULT_TEMPERATURE, nResults: body.n_results ?? RADIO_DEFAULT_N, enabled: body.enabled ?? true });
    return toRadioDto(r);
  }

  /** @throws NotFoundError */
  async update(id: number, patch: { temperature?: number; n_results?: number; enabled?: boolean }): Promise<RadioDto> {
    const r = await this.repo.updateRadio(id, { temperature: patch.temperature, nResults: patch.n_results, enabled: patch.enabled });
    if (!r) throw new NotFoundError(`Radio ${id} not found`);
    return toRadioDto(r);
  }

  /** Deletes a radio (its anchor and the playlists already written stay). @throws NotFoundError */
  async remove(id: number): Promise<void> {
    if (!(await this.repo.deleteRadio(id))) throw new NotFoundError(`Radio ${id} not found`);
  }

  /** Starts a run. @throws ConflictError (409 task_already_running) while one is live */
  async start(): Promise<TaskRun> {
    if (!this.host) throw new AppError('not_ready', 'Radio runs are not available in this process', 503);
    const run = await this.host.startNew();
    await this.publish(run);
    return run;
  }

  /** Waits until the run ends or `ms` pass; returns the last state read. */
  async waitFor(runId: string, ms: number): Promise<TaskRun | undefined> {
    const deadline = Date.now() + ms;
    for (;;) {
      const run = await this.store.find(runId);
      if (!run || isTerminal(run.state) || Date.now() > deadline) return run;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The reference's answer of POST /api/radios/run from a run row. */
  static summary(run: TaskRun): RadioRunSummary {
    const d = run.details as Partial<RunDetails>;
    const created = d.created ?? 0;
    return {
      playlists_created: created,
      radios_enabled: d.radios_enabled ?? 0,
      servers_enabled: d.servers_enabled ?? 0,
      message: run.message,
      failed: d.failed ?? [],
      task_id: run.id,
      status: run.state,
    };
  }

  /** Cancels a live run (task.cancel.requested.v1). */
  async cancel(runId: string): Promise<boolean> {
    const run = await this.store.cancel(runId);
    if (run) await this.publish(run);
    return run !== undefined;
  }

  private async publish(run: TaskRun): Promise<void> {
    await this.bus.publish(RoutingKeys.taskUpdated, toTaskEvent(run, 'radios', 'index')).catch((err: unknown) => this.logger.warn('task update not published', { runId: run.id, err: (err as Error).message }));
  }

  /** The run body (TaskRunHost `execute`): every write is fenced by the lease. */
  async execute(run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal): Promise<void> {
    const lease = keeper.lease;
    const details: RunDetails = { done: [], created: 0, failed: [], radios_enabled: 0, servers_enabled: 0, ...(run.details as Partial<RunDetails>) };
    const save = async (message: string, progress: number) => this.publish(await this.store.save(lease, { message, progress, servers: [], details }));
    try {
      const radios = (await this.repo.listRadios()).filter((r) => r.enabled);
      const servers = await this.peers.listServers();
      details.radios_enabled = radios.length;
      details.servers_enabled = servers.length;
      const total = radios.length * servers.length;
      await save(total ? `Writing ${radios.length} radio(s) on ${servers.length} server(s)` : 'No enabled radio', 1);
      const gen = this.state.current();
      for (const server of servers) {
        for (const radio of radios) {
          const key = `${radio.id}@${server.id}`;
          if (details.done.includes(key)) continue;
          if (stop.aborted || keeper.signal.aborted) return;
          const label = servers.length > 1 ? `${radio.name}@${server.name}` : radio.name;
          try {
            const scope = new RequestScope(gen, server.id, this.scopeDeps);
            const out = await this.alchemy.run(scope, [{ id: String(radio.anchorId), op: 'ADD', type: 'anchor' }], {
              n: radio.nResults,
              temperature: radio.temperature,
              subtractDistance: ANCHOR_DEFAULT_SUBTRACT_DISTANCE,
            });
            const ids = out.results.map((r) => r.item_id);
            if (ids.length === 0) throw new NotFoundError('no song of this server near the anchor');
            await this.peers.replaceRadio(server.id, radio.name, ids, run.id);
            details.created++;
          } catch (err) {
            if (keeper.signal.aborted) return;
            details.failed.push(label);
            this.logger.warn('radio playlist not written', { runId: run.id, radio: radio.name, serverId: server.id, err: (err as Error).message });
          }
          details.done.push(key);
          await save(`Radio "${radio.name}" on ${server.name} (${details.done.length}/${total})`, Math.min(99, (100 * details.done.length) / Math.max(1, total)));
        }
      }
      const message = `Created ${details.created} radio playlist(s) for ${radios.length} enabled radio(s) on ${servers.length} server(s)${details.failed.length ? `; ${details.failed.length} failed: ${details.failed.join(', ')}` : ''}`;
      await this.publish(await this.store.finish(lease, 'SUCCESS', { message, progress: 100, servers: [], details }));
      this.logger.info('radio run finished', { runId: run.id, created: details.created, failed: details.failed.length });
    } catch (err) {
      if (keeper.signal.aborted || stop.aborted) throw err;
      const message = `Radio run failed: ${(err as Error).message}`;
      this.logger.error('radio run failed', { runId: run.id, err: (err as Error).message });
      await this.publish(await this.store.finish(lease, 'FAIL', { message, progress: 100, servers: [], details }));
    }
  }
}
