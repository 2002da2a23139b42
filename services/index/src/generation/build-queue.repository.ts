import type { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_LEASE_TTL_MS, TaskRunStore, queryRows, type LeasedRun, type TaskRun } from '@polyphony/platform';
import type { BuildAdmission, BuildQueue } from './ports';

const T = `"index".build_runs`;
/** Reasons kept on a run (the board shows them; requests coalesced beyond this only add their requester). */
const MAX_REASONS = 20;

/**
 * The queue of index builds (`index.build_runs`, issue 29): the platform task-run table of the index-build task
 * host, with at most one RUNNING and one queued (NEW) build across every replica. Admission and claims run in
 * one transaction each under `LOCK TABLE ... IN EXCLUSIVE MODE` (reads go on), so two replicas asked at once agree:
 * - {@link request}: a request joins the queued build when there is one (its reason and requester are added and
 *   `requested_at` moves forward to the request's `since` (default now), so only a build that started after the
 *   last joined request covers the run);
 *   otherwise a new queued build is inserted;
 * - {@link claim}: nothing while a RUNNING build holds a live lease (one build at a time across replicas, what the
 *   advisory build lock did before); else the RUNNING build whose lease expired or was handed back (a takeover:
 *   its coordinator died or stopped); else the queued build, which becomes RUNNING.
 * Progress, final writes, heartbeats, hand-back and cancel are the platform {@link TaskRunStore}'s statements
 * (fenced by the lease generation); the activation of a generation is fenced by the same lease inside its
 * transaction (`GenerationRepository.activate`), so a coordinator that lost its run never makes its generation live.
 */
export class BuildQueueRepository extends TaskRunStore implements BuildQueue {
  constructor(private readonly db: DataSource) {
    super(db, 'index', 'build_runs', 'An index build is already running');
  }

  private admission<X>(work: (m: EntityManager) => Promise<X>): Promise<X> {
    return this.db.transaction(async (m) => {
      await m.query(`LOCK TABLE ${T} IN EXCLUSIVE MODE`);
      return work(m);
    });
  }

  /**
   * Queues a build, or joins the queued one (see class doc). `coalesced` = the request starts no build of its own now.
   * `since` (default now): the newest change the request is about; the run's `requested_at` becomes the latest of its
   * requests' `since` (it never moves back), and a build that started at or after it covers the run.
   */
  async request(id: string, reason: string, requesterTaskId?: string, since?: Date): Promise<BuildAdmission> {
    const { runId, joined, running } = await this.admission(async (m) => {
      const requester = requesterTaskId ?? null;
      const at = since ?? null;
      const joinedRows = await queryRows<{ id: string }>(m,
        `UPDATE ${T} SET requested_at = GREATEST(requested_at, COALESCE($3::timestamptz, now())), seq = seq + 1,
                details = jsonb_set(jsonb_set(details,
                  '{reasons}', CASE WHEN jsonb_array_length(details->'reasons') < ${MAX_REASONS} THEN (details->'reasons') || to_jsonb($1::text) ELSE details->'reasons' END),
                  '{requesters}', CASE WHEN $2::text IS NULL OR (details->'requesters') ? $2::text THEN details->'requesters' ELSE (details->'requesters') || to_jsonb($2::text) END)
          WHERE state = 'NEW' RETURNING id`,
        [reason.slice(0, 500), requester, at],
      );
      const run = await queryRows<{ id: string }>(m, `SELECT id FROM ${T} WHERE state = 'RUNNING' LIMIT 1`);
      if (joinedRows[0]) return { runId: joinedRows[0].id, joined: true, running: run.length > 0 };
      await m.query(`INSERT INTO ${T} (id, state, message, details, requested_at) VALUES ($1, 'NEW', $2, $3::jsonb, COALESCE($4::timestamptz, now()))`, [
        id,
        run.length ? 'Queued behind the running index build' : 'Queued',
        JSON.stringify({ reasons: [reason.slice(0, 500)], requesters: requester ? [requester] : [] }),
        at,
      ]);
      return { runId: id, joined: false, running: run.length > 0 };
    });
    const run = await this.find(runId);
    if (!run) throw new Error(`index build run ${runId} vanished after admission`);
    return { run, coalesced: joined || running };
  }

  /** {@link TaskStore.claim} for a queue: a takeover first, else the queued build; nothing while a build holds a live lease. */
  override async claim(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<LeasedRun<TaskRun> | undefined> {
    const id = await this.admission(async (m) => {
      const busy = await queryRows(m, `SELECT 1 FROM ${T} WHERE state = 'RUNNING' AND lease_expires_at >= now() LIMIT 1`);
      if (busy.length) return undefined;
      const lease = `lease_owner = $1, lease_generation = lease_generation + 1, lease_expires_at = now() + make_interval(secs => $2), heartbeat_at = now(), seq = seq + 1`;
      const taken = await queryRows<{ id: string }>(m,
        `UPDATE ${T} SET ${lease} WHERE id = (SELECT id FROM ${T} WHERE state = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at < now()) LIMIT 1) RETURNING id`,
        [owner, ttlMs / 1000],
      );
      if (taken[0]) return taken[0].id;
      const next = await queryRows<{ id: string }>(m,
        `UPDATE ${T} SET ${lease}, state = 'RUNNING', started_at = now(), message = 'Starting'
          WHERE id = (SELECT id FROM ${T} WHERE state = 'NEW' ORDER BY requested_at LIMIT 1) RETURNING id`,
        [owner, ttlMs / 1000],
      );
      return next[0]?.id;
    });
    const run = id ? await this.find(id) : undefined;
    return run && { run, lease: { runId: run.id, owner, generation: run.leaseGeneration } };
  }

  /** Queued and running builds (RUNNING first). */
  async liveRuns(): Promise<TaskRun[]> {
    const rows = await queryRows<{ id: string }>(this.db, `SELECT id FROM ${T} WHERE state IN ('NEW','RUNNING') ORDER BY (state = 'RUNNING') DESC, requested_at`);
    const runs = await Promise.all(rows.map((r) => this.find(r.id)));
    return runs.filter((r): r is TaskRun => r !== undefined);
  }

  /**
   * The live generation when its build started at or after the run's last request (`requested_at`): that build
   * read a catalogue snapshot taken after every request the run holds, so the run has nothing left to build.
   */
  async coveringGeneration(runId: string): Promise<number | undefined> {
    const rows = await queryRows<{ generation: string }>(this.db,
      `SELECT b.generation FROM "index".builds b JOIN ${T} r ON r.id = $1 WHERE b.state = 'live' AND b.created_at >= r.requested_at`,
      [runId],
    );
    return rows[0] ? Number(rows[0].generation) : undefined;
  }
}
