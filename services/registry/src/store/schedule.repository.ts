import type { DataSource } from 'typeorm';
import type { ScheduleBody, ScheduleKind } from '@polyphony/contracts';
import { queryRows } from '@polyphony/platform';
import type { ClaimedFiring, Schedule, ScheduleRun, ScheduleStore } from '../domain/schedule.service';

interface Row {
  id: string;
  name: string;
  kind: ScheduleKind;
  cron: string;
  timezone: string;
  enabled: boolean;
  params: Record<string, unknown>;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_result: string | null;
  last_task_id: string | null;
}
const toSchedule = (r: Row): Schedule => ({
  id: r.id,
  name: r.name,
  kind: r.kind,
  cron: r.cron,
  timezone: r.timezone,
  enabled: r.enabled,
  params: r.params,
  nextRunAt: r.next_run_at,
  lastRunAt: r.last_run_at,
  lastResult: r.last_result,
  lastTaskId: r.last_task_id,
});

/** Advisory-lock key of the scheduler pass (one pass at a time across every registry replica). */
const SCHEDULER_LOCK = 'polyphony-scheduler';
/** Advisory-lock key of the once-per-install creation of the built-in schedules. */
const SEED_LOCK = 'polyphony-schedule-seed';

/** registry.schedules / registry.schedule_runs in PostgreSQL. */
export class PgScheduleRepository implements ScheduleStore {
  constructor(private readonly ds: DataSource) {}

  async list(): Promise<Schedule[]> {
    return (await this.ds.query(`SELECT * FROM registry.schedules ORDER BY lower(name)`)).map(toSchedule);
  }

  async find(id: string): Promise<Schedule | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.schedules WHERE id = $1`, [id]);
    return rows[0] ? toSchedule(rows[0]) : undefined;
  }

  async insert(b: ScheduleBody, next: Date | null): Promise<Schedule> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO registry.schedules (name, kind, cron, timezone, enabled, params, next_run_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [b.name, b.kind, b.cron, b.timezone, b.enabled, JSON.stringify(b.params), next],
    );
    return toSchedule(rows[0]!);
  }

  async update(id: string, b: ScheduleBody, next: Date | null): Promise<Schedule | undefined> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE registry.schedules SET name = $2, kind = $3, cron = $4, timezone = $5, enabled = $6, params = $7, next_run_at = $8, updated_at = now() WHERE id = $1 RETURNING *`,
      [id, b.name, b.kind, b.cron, b.timezone, b.enabled, JSON.stringify(b.params), next],
    );
    return rows[0] ? toSchedule(rows[0]) : undefined;
  }

  async remove(id: string): Promise<boolean> {
    return (await queryRows(this.ds, `DELETE FROM registry.schedules WHERE id = $1 RETURNING id`, [id])).length > 0;
  }

  async history(ids: string[], perSchedule: number): Promise<Map<string, ScheduleRun[]>> {
    const out = new Map<string, ScheduleRun[]>();
    if (!ids.length) return out;
    const rows: Array<{ schedule_id: string; fired_at: Date; outcome: string; task_id: string | null; message: string }> = await this.ds.query(
      `SELECT schedule_id, fired_at, outcome, task_id, message FROM (
         SELECT r.*, row_number() OVER (PARTITION BY schedule_id ORDER BY fired_at DESC, id DESC) AS n FROM registry.schedule_runs r WHERE schedule_id = ANY($1::uuid[])
       ) x WHERE n <= $2 ORDER BY fired_at DESC, id DESC`,
      [ids, perSchedule],
    );
    for (const r of rows) {
      const list = out.get(r.schedule_id) ?? [];
      list.push({ firedAt: r.fired_at, outcome: r.outcome, taskId: r.task_id, message: r.message });
      out.set(r.schedule_id, list);
    }
    return out;
  }

  async claimDue(now: Date, next: (s: Schedule) => Date | null): Promise<ClaimedFiring[]> {
    return this.ds.transaction(async (m) => {
      const [lock] = (await m.query(`SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok`, [SCHEDULER_LOCK])) as Array<{ ok: boolean }>;
      if (!lock?.ok) return [];
      const due: Row[] = await m.query(`SELECT * FROM registry.schedules WHERE enabled AND next_run_at <= $1 ORDER BY next_run_at FOR UPDATE`, [now]);
      const claimed: ClaimedFiring[] = [];
      for (const row of due) {
        const s = toSchedule(row);
        // Compare-and-set on the due time: a replica that read the same row before this commit finds nothing to update.
        const moved = await queryRows(m, `UPDATE registry.schedules SET next_run_at = $3, last_run_at = $4, last_result = 'pending', updated_at = now() WHERE id = $1 AND next_run_at = $2 RETURNING id`, [s.id, row.next_run_at, next(s), now]);
        if (!moved.length) continue;
        const run = await queryRows<{ id: string }>(m, `INSERT INTO registry.schedule_runs (schedule_id, due_at, fired_at) VALUES ($1, $2, $3) ON CONFLICT (schedule_id, due_at) DO NOTHING RETURNING id`, [s.id, row.next_run_at, now]);
        if (run[0]) claimed.push({ schedule: s, runId: String(run[0].id) });
      }
      return claimed;
    });
  }

  async seedOnce(marker: string, retiredKeys: readonly string[], make: (retired: Record<string, string>) => Array<{ body: ScheduleBody; next: Date | null }>): Promise<Schedule[] | undefined> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [SEED_LOCK]);
      const done = (await m.query(`SELECT 1 FROM registry.settings WHERE key = $1`, [marker])) as unknown[];
      if (done.length) return undefined;
      const rows: Array<{ key: string; value: string }> = await m.query(`SELECT key, value FROM registry.app_config WHERE key = ANY($1)`, [[...retiredKeys]]);
      const created: Schedule[] = [];
      for (const { body: b, next } of make(Object.fromEntries(rows.map((r) => [r.key, r.value])))) {
        const inserted = await queryRows<Row>(
          m,
          `INSERT INTO registry.schedules (name, kind, cron, timezone, enabled, params, next_run_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING *`,
          [b.name, b.kind, b.cron, b.timezone, b.enabled, JSON.stringify(b.params), next],
        );
        if (inserted[0]) created.push(toSchedule(inserted[0]));
      }
      await m.query(`DELETE FROM registry.app_config WHERE key = ANY($1)`, [[...retiredKeys]]);
      await m.query(`INSERT INTO registry.settings (key, value) VALUES ($1, now()::text)`, [marker]);
      return created;
    });
  }

  async recordOutcome(firing: ClaimedFiring, outcome: string, taskId: string | null, message: string): Promise<void> {
    await this.ds.transaction(async (m) => {
      await m.query(`UPDATE registry.schedule_runs SET outcome = $2, task_id = $3, message = $4 WHERE id = $1`, [firing.runId, outcome, taskId, message.slice(0, 2000)]);
      await m.query(`UPDATE registry.schedules SET last_result = $2, last_task_id = $3 WHERE id = $1`, [firing.schedule.id, outcome, taskId]);
    });
  }
}
