import { Cron } from 'croner';
import { AnalysisStartRequest, CleaningStartRequest, ClusteringStartBody, RadioRunBody, z, type ScheduleBody, type ScheduleDto, type ScheduleKind } from '@polyphony/contracts';
import { AppError, ConflictError, NotFoundError, ValidationError, formatZodError, type Logger } from '@polyphony/platform';
import { ALBUM_OF_THE_WEEK_MARKER, DEFAULT_SCHEDULES_MARKER, RETIRED_SCHEDULE_KEYS, albumOfTheWeekSchedule, defaultSchedules } from './default-schedules';

/** A stored schedule (times as Date). */
export interface Schedule extends Omit<ScheduleBody, 'params'> {
  id: string;
  params: Record<string, unknown>;
  nextRunAt: Date | null;
  lastRunAt: Date | null;
  lastResult: string | null;
  lastTaskId: string | null;
}

export interface ScheduleRun {
  firedAt: Date;
  outcome: string;
  taskId: string | null;
  message: string;
}

/** A schedule whose due time this scheduler claimed (one firing, recorded as a run row). */
export interface ClaimedFiring {
  schedule: Schedule;
  runId: string;
}

/** Persistence port of the scheduler (registry.schedules, registry.schedule_runs). */
export interface ScheduleStore {
  list(): Promise<Schedule[]>;
  find(id: string): Promise<Schedule | undefined>;
  insert(body: ScheduleBody, nextRunAt: Date | null): Promise<Schedule>;
  update(id: string, body: ScheduleBody, nextRunAt: Date | null): Promise<Schedule | undefined>;
  remove(id: string): Promise<boolean>;
  history(ids: string[], perSchedule: number): Promise<Map<string, ScheduleRun[]>>;
  /**
   * Claims every enabled schedule due at `now`, at most once across all replicas: under a
   * transaction-level advisory lock, each due row's `next_run_at` is moved to `next(schedule)`
   * (computed from `now`, so a schedule missed while the service was down fires once, never in a
   * burst) and a pending run row is written. Returns nothing when another replica holds the lock.
   */
  claimDue(now: Date, next: (s: Schedule) => Date | null): Promise<ClaimedFiring[]>;
  recordOutcome(firing: ClaimedFiring, outcome: string, taskId: string | null, message: string): Promise<void>;
  /**
   * Once per install (a `marker` row in registry.settings, written under an advisory lock, so
   * replicas starting together seed once): reads the `retiredKeys` from the config store, inserts the
   * schedules `make` builds from them (one whose name exists already is left alone), deletes the
   * retired keys from the config store and writes the marker. Returns the inserted schedules, or
   * undefined when the install was seeded before.
   */
  seedOnce(marker: string, retiredKeys: readonly string[], make: (retired: Record<string, string>) => Array<{ body: ScheduleBody; next: Date | null }>): Promise<Schedule[] | undefined>;
}

/** Starts one task of a kind over every server; returns its task id. Throws ConflictError (409) when one of its kind is live. */
export type TaskStarter = (kind: ScheduleKind, params: Record<string, unknown>) => Promise<string | null>;
/** Whether a task of this kind is live (NEW or RUNNING) right now. */
export type BusyCheck = (kind: ScheduleKind) => Promise<boolean>;

/**
 * What a schedule's `params` may hold per kind: the body schema of the start route its firings call
 * (the backup's `keep` is the retention: ready archives kept after it). A schedule whose params that
 * route would refuse is refused when saved (400), instead of failing at every firing.
 */
export const SCHEDULE_PARAMS: Record<ScheduleKind, z.ZodTypeAny> = {
  analysis: AnalysisStartRequest,
  clustering: ClusteringStartBody,
  cleaning: CleaningStartRequest,
  radios: RadioRunBody,
  index_rebuild: z.object({}).passthrough(),
  sweep: z.object({}).strict(),
  backup: z.object({ keep: z.number().int().min(1).max(10_000).optional() }).strict(),
  album_of_the_week: z.object({}).strict(),
};

/** Throws ValidationError (400) when `params` do not suit the kind's start route. */
export function checkParams(kind: ScheduleKind, params: Record<string, unknown>): void {
  const r = SCHEDULE_PARAMS[kind].safeParse(params);
  if (!r.success) throw new ValidationError(`Invalid params for a ${kind} schedule: ${formatZodError(r.error)}`, r.error.issues);
}

/**
 * Parses and checks a cron expression in a time zone with croner (5 fields, or 6 with seconds
 * first). Throws ValidationError (400) carrying the parser's message.
 */
export function parseCron(expression: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ValidationError(`Unknown time zone '${timezone}' (use an IANA name such as Europe/Berlin)`);
  }
  try {
    const cron = new Cron(expression, { timezone, paused: true });
    return cron;
  } catch (err) {
    throw new ValidationError(`Invalid cron expression '${expression}': ${(err as Error).message}`);
  }
}

/** The next run strictly after `from` (null when the expression never fires again). */
export function nextRun(expression: string, timezone: string, from: Date): Date | null {
  return parseCron(expression, timezone).nextRun(from) ?? null;
}

/**
 * Schedules: CRUD with validation, and the scheduler loop. Every replica may run the loop; the
 * store's claim (advisory lock + compare-and-set on `next_run_at`) makes each due time fire exactly
 * once. A firing never starts a task while one of its kind runs: it records `skipped: busy`.
 */
export class ScheduleService {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly store: ScheduleStore,
    private readonly start: TaskStarter,
    private readonly busy: BusyCheck,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async list(): Promise<ScheduleDto[]> {
    const schedules = await this.store.list();
    const history = await this.store.history(schedules.map((s) => s.id), 10);
    return schedules.map((s) => toDto(s, history.get(s.id) ?? []));
  }

  async create(body: ScheduleBody): Promise<ScheduleDto> {
    checkParams(body.kind, body.params);
    const next = body.enabled ? nextRun(body.cron, body.timezone, this.clock()) : (parseCron(body.cron, body.timezone), null);
    try {
      return toDto(await this.store.insert(body, next), []);
    } catch (err) {
      throw uniqueName(err, body.name);
    }
  }

  async update(id: string, body: ScheduleBody): Promise<ScheduleDto> {
    checkParams(body.kind, body.params);
    const next = body.enabled ? nextRun(body.cron, body.timezone, this.clock()) : (parseCron(body.cron, body.timezone), null);
    let s: Schedule | undefined;
    try {
      s = await this.store.update(id, body, next);
    } catch (err) {
      throw uniqueName(err, body.name);
    }
    if (!s) throw new NotFoundError(`Schedule ${id} not found`);
    const history = await this.store.history([id], 10);
    return toDto(s, history.get(id) ?? []);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.store.remove(id))) throw new NotFoundError(`Schedule ${id} not found`);
  }

  /**
   * Creates the built-in schedules once per install (default-schedules.ts: the cleaning schedule that
   * replaces CLEANING_SCHEDULE_HOURS, converted from its stored value). Idempotent; an admin's later
   * edit or deletion stays. Returns the schedules created now (empty when seeded before).
   * @param timezone IANA zone of the built-in schedules (the install's TZ)
   */
  async seedDefaults(timezone: string): Promise<ScheduleDto[]> {
    let zone = timezone;
    try {
      parseCron('0 0 * * *', zone);
    } catch {
      zone = 'UTC';
    }
    const created = await this.store.seedOnce(DEFAULT_SCHEDULES_MARKER, RETIRED_SCHEDULE_KEYS, (retired) =>
      defaultSchedules(retired, zone).map((body) => ({ body, next: body.enabled ? nextRun(body.cron, body.timezone, this.clock()) : null })),
    );
    for (const s of created ?? []) this.logger.info('built-in schedule created', { name: s.name, kind: s.kind, cron: s.cron, timezone: s.timezone, enabled: s.enabled });
    return (created ?? []).map((s) => toDto(s, []));
  }

  /**
   * Creates the built-in, disabled "Album of the Week" schedule once per install (its own marker, so installs
   * seeded before issue 31 get it too); an admin's later edit or deletion stays. Returns what was created now.
   * @param timezone IANA zone of the schedule (the install's TZ; UTC when unknown)
   */
  async seedAlbumOfTheWeek(timezone: string): Promise<ScheduleDto[]> {
    let zone = timezone;
    try {
      parseCron('0 0 * * *', zone);
    } catch {
      zone = 'UTC';
    }
    const created = await this.store.seedOnce(ALBUM_OF_THE_WEEK_MARKER, [], () => [{ body: albumOfTheWeekSchedule(zone), next: null }]);
    for (const s of created ?? []) this.logger.info('built-in schedule created', { name: s.name, kind: s.kind, cron: s.cron, timezone: s.timezone, enabled: s.enabled });
    return (created ?? []).map((s) => toDto(s, []));
  }

  /** Next `count` run times of an expression, ISO strings (for the editor's preview). */
  preview(expression: string, timezone: string, count: number): string[] {
    return parseCron(expression, timezone)
      .nextRuns(count, this.clock())
      .map((d) => d.toISOString());
  }

  /** One scheduler pass: claim what is due and fire it. Returns the firings' outcomes (tests). */
  async tick(): Promise<Array<{ scheduleId: string; outcome: string; taskId: string | null }>> {
    const now = this.clock();
    const claimed = await this.store.claimDue(now, (s) => nextRun(s.cron, s.timezone, now));
    const out: Array<{ scheduleId: string; outcome: string; taskId: string | null }> = [];
    for (const firing of claimed) {
      const { schedule } = firing;
      let outcome = 'started';
      let taskId: string | null = null;
      let message = '';
      try {
        if (await this.busy(schedule.kind)) {
          outcome = 'skipped: busy';
          message = `a ${schedule.kind} task is already running`;
        } else {
          taskId = await this.start(schedule.kind, schedule.params);
          message = taskId ? `task ${taskId} started` : 'started';
        }
      } catch (err) {
        if (err instanceof ConflictError || (err instanceof AppError && err.httpStatus === 409)) {
          outcome = 'skipped: busy';
          message = (err as Error).message;
        } else {
          outcome = 'failed';
          message = (err as Error).message;
        }
      }
      this.logger.info('schedule fired', { scheduleId: schedule.id, name: schedule.name, kind: schedule.kind, outcome, taskId });
      await this.store.recordOutcome(firing, outcome, taskId, message);
      out.push({ scheduleId: schedule.id, outcome, taskId });
    }
    return out;
  }

  /** Starts the loop (one pass every `intervalMs`; passes never overlap). */
  startLoop(intervalMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.ticking) return;
      this.ticking = this.tick()
        .then(() => undefined)
        .catch((err: Error) => void this.logger.warn('scheduler pass failed; retrying at the next pass', { error: err.message }))
        .finally(() => {
          this.ticking = undefined;
        });
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the loop and waits for a pass in progress. */
  async stopLoop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
  }
}

function uniqueName(err: unknown, name: string): Error {
  if ((err as { code?: string }).code === '23505') return new ConflictError(`A schedule named '${name}' exists`);
  return err as Error;
}

function toDto(s: Schedule, history: ScheduleRun[]): ScheduleDto {
  return {
    id: s.id,
    name: s.name,
    kind: s.kind,
    cron: s.cron,
    timezone: s.timezone,
    enabled: s.enabled,
    params: s.params,
    next_run_at: s.nextRunAt?.toISOString() ?? null,
    last_run_at: s.lastRunAt?.toISOString() ?? null,
    last_result: s.lastResult,
    last_task_id: s.lastTaskId,
    history: history.map((h) => ({ fired_at: h.firedAt.toISOString(), outcome: h.outcome, task_id: h.taskId, message: h.message })),
  };
}
