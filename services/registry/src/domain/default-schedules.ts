import type { ScheduleBody } from '@polyphony/contracts';

/**
 * Built-in schedules an install starts with, and the migration of the settings they replace.
 *
 * Cleaning used to run on the catalogue's own timer every CLEANING_SCHEDULE_HOURS (default 24; 0 = off),
 * a second scheduler beside /api/cron. It is now an ordinary schedule named "Cleaning", created once per
 * install (a marker row in registry.settings; an admin may edit, disable or delete it and it is never
 * created again). Its expression comes from the old setting, read from the config store (an admin's
 * value, or the environment's on first start), and the old key is then removed from the store.
 */

/** Name of the built-in cleaning schedule. */
export const DEFAULT_CLEANING_SCHEDULE = 'Cleaning';

/** registry.settings key recording that the built-in schedules were created (once per install). */
export const DEFAULT_SCHEDULES_MARKER = 'default_schedules_seeded';

/** Settings retired into schedules: still imported from the environment on first start, then converted and deleted. */
export const RETIRED_SCHEDULE_KEYS = ['CLEANING_SCHEDULE_HOURS'] as const;

/** The old default of CLEANING_SCHEDULE_HOURS (daily). */
const OLD_DEFAULT_HOURS = 24;

/** Largest value ≤ `n` in `steps` (ascending; the first when none is). */
function stepAtMost(n: number, steps: readonly number[]): number {
  let out = steps[0]!;
  for (const s of steps) if (s <= n) out = s;
  return out;
}

/**
 * The cron expression closest to "every `hours` hours" (the old CLEANING_SCHEDULE_HOURS):
 * - 0: disabled (kept so the admin can switch it on), daily at 03:30 when switched on;
 * - under an hour: every m minutes, m rounded down to a divisor of 60 (`*\/m * * * *`);
 * - 1 to 23 hours: every h hours at minute 30, h rounded down to a divisor of 24 (`30 *\/h * * *`);
 * - 1 day: daily at 03:30; 7 days: Sundays at 03:30; 28 days or more: the 1st of each month;
 *   other day counts: every d-th day of the month at 03:30 (`30 3 *\/d * *`; the count restarts each month).
 * Fixed clock times replace the old "N hours after the last run", so runs land in the night.
 * A value that is not a non-negative number is treated as the old default (daily).
 */
export function cleaningCronFromHours(raw: string | number | undefined): { cron: string; enabled: boolean } {
  const parsed = raw === undefined || raw === '' ? OLD_DEFAULT_HOURS : Number(raw);
  const hours = Number.isFinite(parsed) && parsed >= 0 ? parsed : OLD_DEFAULT_HOURS;
  if (hours === 0) return { cron: '30 3 * * *', enabled: false };
  if (hours < 1) {
    const minutes = Math.max(1, Math.round(hours * 60));
    return { cron: `*/${stepAtMost(minutes, [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30])} * * * *`, enabled: true };
  }
  if (hours < 23.5) {
    const h = stepAtMost(Math.round(hours), [1, 2, 3, 4, 6, 8, 12]);
    return { cron: `30 */${h} * * *`, enabled: true };
  }
  const days = Math.max(1, Math.round(hours / 24));
  if (days === 1) return { cron: '30 3 * * *', enabled: true };
  if (days === 7) return { cron: '30 3 * * 0', enabled: true };
  if (days >= 28) return { cron: '30 3 1 * *', enabled: true };
  return { cron: `30 3 */${days} * *`, enabled: true };
}

/**
 * The built-in schedules of an install, from the retired settings' stored values.
 * @param retired values of RETIRED_SCHEDULE_KEYS found in the config store
 * @param timezone IANA zone of the schedules (the install's TZ)
 */
export function defaultSchedules(retired: Record<string, string>, timezone: string): ScheduleBody[] {
  const cleaning = cleaningCronFromHours(retired.CLEANING_SCHEDULE_HOURS);
  return [{ name: DEFAULT_CLEANING_SCHEDULE, kind: 'cleaning', cron: cleaning.cron, timezone, enabled: cleaning.enabled, params: {} }];
}

/** registry.settings key recording that the built-in Album of the Week schedule was created (once per install). */
export const ALBUM_OF_THE_WEEK_MARKER = 'album_of_the_week_schedule_seeded';

/** Name of the built-in Album of the Week schedule. */
export const ALBUM_OF_THE_WEEK_SCHEDULE = 'Album of the Week';

/**
 * The built-in Album of the Week schedule (issue 31): Saturdays at 00:30 in the install's zone (the reference's
 * default), disabled until an admin enables it. Each firing refills the "Album of the Week" playlist of every server.
 */
export function albumOfTheWeekSchedule(timezone: string): ScheduleBody {
  return { name: ALBUM_OF_THE_WEEK_SCHEDULE, kind: 'album_of_the_week', cron: '30 0 * * 6', timezone, enabled: false, params: {} };
}
