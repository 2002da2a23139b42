/**
 * Radios (issue 14 "Alchemy anchors and radios"): a saved anchor + n_results + temperature, run into one
 * playlist `<anchor name>_radio` per media server. Rules: shared/contracts/src/anchors.ts; operations:
 * docs/architecture.md "Anchors and radios" and "Task runs".
 */
import { NotFoundError, TaskHost, isTerminal, leaseOwnerName, type Bus, type Logger, type TaskContext, type TaskEnd, type TaskHostOptions, type TaskRun, type TaskRunStore } from '@polyphony/platform';
import { RADIO_SUFFIX, SERVICE_DEFAULTS, type AlchemyItem, type RadioCreateBody, type RadioDto, type RadioPlaylistResponse, type RadioRunSummary } from '@polyphony/contracts';
import type { IndexState } from '../core/generation';
import { RequestScope, type ScopeDeps } from '../core/scope';
import type { AlchemyService } from './alchemy.service';
import type { SavedAlchemyStore, StoredRadio } from './ports';
import { ANCHOR_DEFAULT_SUBTRACT_DISTANCE, type AnchorService } from './saved-alchemy.service';

/** Radio defaults (reference ALCHEMY_TEMPERATURE, ALCHEMY_DEFAULT_N_RESULTS). */
export const RADIO_DEFAULT_TEMPERATURE = SERVICE_DEFAULTS.alchemyTemperature;
export const RADIO_DEFAULT_N = SERVICE_DEFAULTS.alchemyDefaultN;
/** How long POST /api/radios/run waits for its run before answering 202 (the Lyrion plugin gives up at 180 s). */
export const RADIO_RUN_WAIT_MS = 170_000;

/** A configured media server as the radio run needs it. */
export interface RadioServer {
  id: string;
  name: string;
}

/** What a radio run needs from its peers. */
export interface RadioPeers {
  /** Every configured server (registry GET /internal/servers). */
  listServers(): Promise<RadioServer[]>;
  /**
   * Replaces `<name>_radio` on one server with these tracks (playlist POST /internal/playlists/radio); with `userId`
   * (the radio's creator) the playlist service writes it with that user's linked account when there is one.
   */
  replaceRadio(serverId: string, name: string, ids: string[], runId: string, userId?: string): Promise<RadioPlaylistResponse>;
}

function toRadioDto(r: StoredRadio): RadioDto {
  return { id: r.id, anchor_id: r.anchorId, name: r.name, temperature: r.temperature, n_results: r.nResults, enabled: r.enabled, playlist_name: `${r.name}${RADIO_SUFFIX}` };
}

/** A run's durable results (`details` of its `index.radio_runs` row), read back by a replica taking it over. */
interface RunDetails {
  /** `<radio id>@<server id>` of every playlist handled (written or failed), so a resumed run skips them. */
  done: string[];
  created: number;
  failed: string[];
  radios_enabled: number;
  servers_enabled: number;
  [k: string]: unknown;
}

/** The working state of one coordination: the durable results, and the plan once read (first step). */
interface RadioWork {
  details: RunDetails;
  plan?: { radios: StoredRadio[]; servers: RadioServer[] };
}

/**
 * Radios: CRUD, and the run (task type `radios`, owner index, on the platform {@link TaskHost} over
 * `index.radio_runs`; this class is its executor): for every configured server and every enabled radio,
 * alchemy with the radio's anchor as the single ADD item, its n_results and temperature, on that server's
 * songs; the result replaces the playlist `<anchor name>_radio` written there by an earlier run (the playlist
 * service deletes only playlists it recorded as radios). Steps: read the enabled radios and the servers
 * (a failure there ends the run FAIL), then one (radio, server) pair a step; a pair that fails is recorded
 * in `details.failed` and the run goes on. One run at a time (409). A run whose coordinator died or handed
 * it back on SIGTERM is taken over by another replica and skips the pairs already handled (`details.done`).
 * Households (issue 34): a radio created by a signed-in user is written with that user's own linked account on a
 * server when they have one there (private to them in polyphony), else with the server's account.
 * A cancel (task.cancel.requested.v1) ends it REVOKED at once; playlists written so far stay.
 */
export class RadioService {
  /** Starts runs, takes over runs whose coordinator died, cancels, hands leases back on stop. */
  readonly host: TaskHost<RadioWork>;

  constructor(
    private readonly repo: SavedAlchemyStore,
    private readonly anchors: AnchorService,
    private readonly alchemy: AlchemyService,
    private readonly state: IndexState,
    private readonly scopeDeps: ScopeDeps,
    private readonly peers: RadioPeers,
    private readonly store: TaskRunStore,
    bus: Bus,
    private readonly logger: Logger,
    /** Lease TTL and takeover scan of the host (tests); default the platform's. */
    hostOptions: Pick<TaskHostOptions, 'ttlMs' | 'scanMs'> = {},
  ) {
    this.host = new TaskHost<RadioWork>(
      store,
      leaseOwnerName('index-radios'),
      { start: (ctx) => this.begin(ctx), step: (work, ctx) => this.step(work, ctx) },
      logger,
      { bus, type: 'radios', owner: 'index' },
      { ...hostOptions, requestIdPrefix: 'radios', logLabel: 'radio run' },
    );
  }

  async list(): Promise<RadioDto[]> {
    return (await this.repo.listRadios()).map(toRadioDto);
  }

  /**
   * Saves a radio on an anchor, or on a new recipe (its anchor is saved first under the radio's name).
   * @param createdBy the caller's user name (recorded on a new anchor)
   * @param creatorUserId the signed-in caller's user id (households: the radio's playlists are written with that
   *   user's linked account); undefined for the API token and Setup callers (the server's account)
   * @throws NotFoundError (unknown anchor), ConflictError (the anchor has a radio; taken name)
   */
  async create(scope: RequestScope, body: RadioCreateBody, createdBy: string | null, creatorUserId?: string): Promise<RadioDto> {
    let anchorId = body.anchor_id;
    if (anchorId === undefined) anchorId = (await this.anchors.create(scope, { name: body.name!, items: body.items as AlchemyItem[] }, createdBy)).id;
    else if (!(await this.repo.findAnchor(anchorId))) throw new NotFoundError(`Anchor ${anchorId} not found`);
    const r = await this.repo.insertRadio({ anchorId, temperature: body.temperature ?? RADIO_DEFAULT_TEMPERATURE, nResults: body.n_results ?? RADIO_DEFAULT_N, enabled: body.enabled ?? true, createdByUserId: creatorUserId ?? null });
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

  /** Starts a run coordinated by this replica and publishes it (NEW). @throws ConflictError (409 task_already_running) while one is live */
  start(): Promise<TaskRun> {
    return this.host.start();
  }

  /** Waits until the run ends or `ms` pass (polls its row every 200 ms); returns the last state read. */
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
    return {
      playlists_created: d.created ?? 0,
      radios_enabled: d.radios_enabled ?? 0,
      servers_enabled: d.servers_enabled ?? 0,
      message: run.message,
      failed: d.failed ?? [],
      task_id: run.id,
      status: run.state,
    };
  }

  /** Ends a live run as REVOKED at once, from any replica (task.cancel.requested.v1); false when unknown or finished. */
  async cancel(runId: string): Promise<boolean> {
    return (await this.host.cancel(runId)) !== undefined;
  }

  /** Executor `start`: the durable results of the run (empty for a new run, `details` of a run taken over). */
  private async begin(ctx: TaskContext): Promise<RadioWork> {
    return { details: { done: [], created: 0, failed: [], radios_enabled: 0, servers_enabled: 0, ...(ctx.run.details as Partial<RunDetails>) } };
  }

  /** Executor `step`: reads the plan first, then writes the next (radio, server) pair not done, then ends the run. */
  private async step(work: RadioWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    const d = work.details;
    if (!work.plan) {
      try {
        const radios = (await this.repo.listRadios()).filter((r) => r.enabled);
        const servers = await this.peers.listServers();
        work.plan = { radios, servers };
      } catch (err) {
        ctx.throwIfStopped();
        this.logger.error('radio run failed', { runId: ctx.run.id, err: (err as Error).message });
        return { state: 'FAIL', message: `Radio run failed: ${(err as Error).message}`, details: d };
      }
      const { radios, servers } = work.plan;
      d.radios_enabled = radios.length;
      d.servers_enabled = servers.length;
      const total = radios.length * servers.length;
      await ctx.report({ message: total ? `Writing ${radios.length} radio(s) on ${servers.length} server(s)` : 'No enabled radio', progress: 1, details: d });
      return undefined;
    }
    const { radios, servers } = work.plan;
    for (const server of servers) {
      for (const radio of radios) {
        const key = `${radio.id}@${server.id}`;
        if (d.done.includes(key)) continue;
        await this.writeRadio(work, ctx, radio, server);
        d.done.push(key);
        const total = radios.length * servers.length;
        await ctx.report({ message: `Radio "${radio.name}" on ${server.name} (${d.done.length}/${total})`, progress: Math.min(99, (100 * d.done.length) / Math.max(1, total)), details: d });
        return undefined;
      }
    }
    const message = `Created ${d.created} radio playlist(s) for ${radios.length} enabled radio(s) on ${servers.length} server(s)${d.failed.length ? `; ${d.failed.length} failed: ${d.failed.join(', ')}` : ''}`;
    return { state: 'SUCCESS', message, details: d };
  }

  /** One radio on one server: alchemy on the server's songs, then the playlist replaced; a failure is recorded, not thrown. */
  private async writeRadio(work: RadioWork, ctx: TaskContext, radio: StoredRadio, server: RadioServer): Promise<void> {
    const d = work.details;
    try {
      const scope = new RequestScope(this.state.current(), server.id, this.scopeDeps);
      const out = await this.alchemy.run(scope, [{ id: String(radio.anchorId), op: 'ADD', type: 'anchor' }], {
        n: radio.nResults,
        temperature: radio.temperature,
        subtractDistance: ANCHOR_DEFAULT_SUBTRACT_DISTANCE,
      });
      const ids = out.results.map((r) => r.item_id);
      if (ids.length === 0) throw new NotFoundError('no song of this server near the anchor');
      await this.peers.replaceRadio(server.id, radio.name, ids, ctx.run.id, radio.createdByUserId ?? undefined);
      d.created++;
    } catch (err) {
      // Cancelled, taken over or shutting down: stop without recording the pair (the next coordinator redoes it).
      ctx.throwIfStopped();
      d.failed.push(work.plan!.servers.length > 1 ? `${radio.name}@${server.name}` : radio.name);
      this.logger.warn('radio playlist not written', { runId: ctx.run.id, radio: radio.name, serverId: server.id, err: (err as Error).message });
    }
  }
}
