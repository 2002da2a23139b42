/**
 * The import from the reference implementation (issue 34) as a task (type `import`, owner catalogue) on the
 * platform's {@link TaskHost} over `catalogue.import_runs`: one import at a time (409), shown on the task board,
 * taken over by another replica (or this one after a restart) when its coordinator dies, and then run again
 * from the start (the import is one transaction and idempotent).
 *
 * Steps: open the source (connection string read-only, or the uploaded dump kept on disk until the run ends),
 * read and plan (plan.ts), write in one transaction (dry run: rolled back), then after a real import ask the
 * index for a rebuild so similar-songs answers serve the imported vectors at once, and check a sample of the imported
 * vectors against polyphony's computation of the same MusiCNN layer (agreement.ts; report `vector_agreement`).
 *
 * A connection string holds a password: it is kept in this process's memory only, never in the run's row, log
 * or board event (the row keeps it with the password masked). A cancel (task.cancel.requested.v1) seen before
 * the commit rolls the whole import back. A run taken over after a restart therefore
 * fails with a message asking to start it again; an upload's path is kept and its run resumes.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { ImportReport, ImportStatus, VectorAgreement } from '@polyphony/contracts';
import { AppError, TaskHost, ValidationError, leaseOwnerName, type Bus, type Logger, type TaskContext, type TaskEnd, type TaskRunStore } from '@polyphony/platform';
import { PlanError, REFERENCE_EMBEDDER_VERSION, Skips, planImport, type PlanSong } from './plan';
import { agreementSample, summariseAgreement, type AgreementAnswer } from './agreement';
import type { ReferenceImportStore, ReferenceSourceFactory } from './ports';

/** Parameters of a run (its row's `details.params`). */
interface ImportParams {
  kind: 'connection' | 'dump';
  /** The connection string with its password masked (display only). */
  display?: string;
  /** Key of the connection string in this process's memory. */
  secretRef?: string;
  dumpPath?: string;
  dryRun: boolean;
}

interface ImportWork {
  params: ImportParams;
}

/** What the service needs besides its stores. */
export interface ReferenceImportDeps {
  /** Latest run of the import table (status route). */
  latest(): Promise<{ id: string; state: string; message: string; progress: number; details: Record<string, unknown> } | undefined>;
  /** Asks the index for a full rebuild after a real import (errors are logged, not fatal). */
  requestIndexRebuild(): Promise<void>;
  /** Mapping changes of these servers (availability, index id maps, matched counts). */
  mappingsChanged(serverIds: string[]): void;
  /**
   * The reference's MusiCNN vector of one file computed by polyphony (analysis POST /internal/analysis/reference-vector),
   * for the agreement check; undefined when this deployment has no analysis peer (the check is left out).
   * @throws an AppError with the analysis worker's reason (model missing, download or decode failed)
   */
  referenceVector?(serverId: string, providerId: string): Promise<{ vector: number[]; patches: number; precision: string }>;
}

/** Masks the password of a connection string. */
export function maskConnectionString(cs: string): string {
  try {
    const u = new URL(cs);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable connection string)';
  }
}

/** See module docs. */
export class ReferenceImportService {
  readonly host: TaskHost<ImportWork>;
  private readonly secrets = new Map<string, string>();

  constructor(
    runs: TaskRunStore,
    private readonly sources: ReferenceSourceFactory,
    private readonly store: ReferenceImportStore,
    private readonly deps: ReferenceImportDeps,
    bus: Bus,
    private readonly logger: Logger,
  ) {
    this.host = new TaskHost<ImportWork>(
      runs,
      leaseOwnerName('catalogue-import'),
      { start: (ctx) => this.begin(ctx), step: (work, ctx) => this.step(work, ctx) },
      logger,
      { bus, type: 'import', owner: 'catalogue' },
      { requestIdPrefix: 'import', logLabel: 'reference import' },
    );
  }

  /**
   * Starts an import from a connection string (202 with the task id).
   * @throws ConflictError (409) while an import is live; ValidationError (400) for a string that is not a postgres URL.
   */
  async startFromConnection(connectionString: string, dryRun: boolean): Promise<{ task_id: string }> {
    if (!/^postgres(ql)?:\/\//i.test(connectionString)) throw new ValidationError('connection_string must be a postgres:// or postgresql:// URL');
    const secretRef = randomUUID();
    this.secrets.set(secretRef, connectionString);
    try {
      const run = await this.host.start({ params: { kind: 'connection', display: maskConnectionString(connectionString), secretRef, dryRun } satisfies ImportParams });
      return { task_id: run.id };
    } catch (err) {
      this.secrets.delete(secretRef);
      throw err;
    }
  }

  /** Starts an import from an uploaded dump already written to `path` (removed when the run ends). @throws ConflictError (409). */
  async startFromDump(path: string, dryRun: boolean): Promise<{ task_id: string }> {
    const run = await this.host.start({ params: { kind: 'dump', dumpPath: path, dryRun } satisfies ImportParams });
    return { task_id: run.id };
  }

  /** The last import: state, progress and report. */
  async status(): Promise<ImportStatus> {
    const r = await this.deps.latest();
    if (!r) return { task_id: null, state: null, message: null, progress: null, report: null };
    return { task_id: r.id, state: r.state, message: r.message, progress: r.progress, report: (r.details.report as ImportReport | undefined) ?? null };
  }

  /**
   * The agreement check (agreement.ts): a sample of imported songs with a file on a polyphony server, each computed by
   * the analysis worker, one at a time; a song the worker cannot compute is reported as failed with its reason. Stops
   * asking after the first `model_unavailable` (every other song would fail the same way).
   */
  private async agreement(songs: PlanSong[], servers: Record<string, string>, ctx: TaskContext): Promise<VectorAgreement> {
    const sample = agreementSample(songs, servers);
    const answers: AgreementAnswer[] = [];
    for (const c of sample) {
      ctx.throwIfStopped();
      try {
        answers.push(await this.deps.referenceVector!(c.serverId, c.providerId));
      } catch (err) {
        answers.push({ error: (err as Error).message });
        if (err instanceof AppError && err.code === 'model_unavailable') break;
      }
    }
    const out = summariseAgreement(sample, answers);
    this.logger.info('imported vectors checked against polyphony\'s MusiCNN', { status: out.status, compared: out.songs.length, agreeing: out.agreeing, min: out.min_cosine, median: out.median_cosine });
    return out;
  }

  private async begin(ctx: TaskContext): Promise<ImportWork> {
    const params = ctx.run.details.params as ImportParams;
    await ctx.report({ message: ctx.resumed ? 'Import starting again (taken over)' : 'Import starting', progress: 1 });
    return { params };
  }

  private async step(work: ImportWork, ctx: TaskContext): Promise<TaskEnd> {
    const { params } = work;
    const t0 = Date.now();
    try {
      let source;
      try {
        if (params.kind === 'connection') {
          const cs = params.secretRef ? this.secrets.get(params.secretRef) : undefined;
          if (!cs) return { state: 'FAIL', message: 'The import was interrupted by a restart; its connection string is not stored: start it again' };
          source = await this.sources.connection(cs);
        } else source = await this.sources.dump(params.dumpPath!);
      } catch (err) {
        return { state: 'FAIL', message: `Cannot read the reference: ${(err as Error).message}` };
      }
      const skips = new Skips();
      let plan;
      try {
        plan = await planImport(source, skips, async (table) => {
          ctx.throwIfStopped();
          await ctx.report({ message: `Read ${table}`, progress: 10 });
        });
      } catch (err) {
        if (err instanceof PlanError) return { state: 'FAIL', message: err.message };
        throw err;
      } finally {
        await source.close();
      }
      await ctx.report({ message: `Writing ${plan.songs.length} songs${params.dryRun ? ' (dry run)' : ''}`, progress: 50 });
      const result = await this.store.apply(plan, skips, params.dryRun, () => ctx.signal.aborted);
      ctx.throwIfStopped();
      const report: ImportReport = {
        layout: plan.layout,
        dry_run: params.dryRun,
        embedder_version: REFERENCE_EMBEDDER_VERSION,
        tables: result.tables,
        skipped: skips.list(),
        servers: result.servers,
        elapsed_ms: Date.now() - t0,
      };
      if (!params.dryRun) {
        this.deps.mappingsChanged(result.touchedServers);
        await this.deps.requestIndexRebuild().catch((err: unknown) => this.logger.warn('index rebuild after the import could not be requested', { error: (err as Error).message }));
        if (this.deps.referenceVector) {
          await ctx.report({ message: 'Checking imported vectors against polyphony\'s MusiCNN', progress: 90 });
          report.vector_agreement = await this.agreement(plan.songs, result.servers, ctx);
        }
      }
      const songs = result.tables.score ?? { imported: 0, existing: 0, skipped: 0 };
      const message = `${params.dryRun ? 'Dry run: would import' : 'Imported'} ${songs.imported} songs (${songs.existing} already present, ${songs.skipped} skipped) from the ${plan.layout} reference`;
      this.logger.info('reference import done', { taskId: ctx.run.id, dryRun: params.dryRun, songs: songs.imported, elapsedMs: report.elapsed_ms });
      return { state: 'SUCCESS', message, details: { report } };
    } finally {
      if (params.secretRef) this.secrets.delete(params.secretRef);
      if (params.dumpPath) await rm(params.dumpPath, { force: true }).catch(() => undefined);
    }
  }
}
