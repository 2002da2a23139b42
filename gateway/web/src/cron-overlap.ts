/**
 * Whether two cron schedules can fire in the same minute (the Schedules page's warning, issue 31). Pure: no DOM.
 *
 * Expressions as the registry's scheduler (croner) reads them: 5 fields `minute hour day-of-month month
 * day-of-week`, or 6 with seconds first (seconds are ignored: "the same minute"); `*`, `?`, numbers, ranges
 * `a-b`, steps `*\/n`, `a-b/n`, `a/n`, lists, month names JAN-DEC, day names SUN-SAT, day 7 = Sunday. Fields
 * using `L`, `W` or `#` are taken as "any value" (the check then errs towards warning). Day rule (Vixie cron,
 * croner's default legacy mode): when both day-of-month and day-of-week are restricted (neither starts with `*`
 * nor is `?`), a day matches if EITHER matches; otherwise both must.
 *
 * Two schedules in different time zones are compared at the offsets each zone has in mid-January and mid-July
 * (winter and summer time); the hour a DST change skips or repeats is not modelled. The days searched are the
 * next 28 years from `from` (every weekday/date/month combination, leap days included, occurs in that span).
 */

export interface CronSpec {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  doms: ReadonlySet<number>;
  months: ReadonlySet<number>;
  /** 0 = Sunday. */
  dows: ReadonlySet<number>;
  domRestricted: boolean;
  dowRestricted: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function range(lo: number, hi: number): Set<number> {
  const s = new Set<number>();
  for (let i = lo; i <= hi; i++) s.add(i);
  return s;
}

/** Values of one field in [lo, hi]; `names` maps names to values (index + offset). Throws on a malformed part. */
function parseField(text: string, lo: number, hi: number, names: string[] = [], nameBase = 0): Set<number> {
  const f = text.toUpperCase();
  if (f === '*' || f === '?' || /[LW#]/.test(f)) return range(lo, hi);
  const value = (v: string): number => {
    const i = names.indexOf(v);
    if (i >= 0) return i + nameBase;
    if (!/^\d+$/.test(v)) throw new Error(`Cannot read "${v}" in "${text}"`);
    return Number(v);
  };
  const out = new Set<number>();
  for (const part of f.split(',')) {
    const [base, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`Bad step in "${text}"`);
    let a: number;
    let b: number;
    if (base === '*' || base === '') [a, b] = [lo, hi];
    else if (base!.includes('-')) {
      const [x, y] = base!.split('-');
      [a, b] = [value(x!), value(y!)];
    } else {
      a = value(base!);
      b = stepText === undefined ? a : hi;
    }
    for (let v = a; v <= b; v += step) out.add(v);
  }
  return out;
}

/** Parses an expression (5 fields, or 6 with seconds first). @throws Error for a malformed one */
export function parseCronSpec(expression: string): CronSpec {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) throw new Error(`A cron expression has 5 or 6 fields, not ${parts.length}`);
  const [min, hour, dom, month, dow] = parts.length === 6 ? parts.slice(1) : parts;
  const dows = parseField(dow!, 0, 7, DAYS);
  if (dows.has(7)) dows.add(0);
  dows.delete(7);
  const restricted = (f: string) => !(f.startsWith('*') || f === '?');
  return {
    minutes: parseField(min!, 0, 59),
    hours: parseField(hour!, 0, 23),
    doms: parseField(dom!, 1, 31),
    months: parseField(month!, 1, 12, MONTHS, 1),
    dows,
    domRestricted: restricted(dom!),
    dowRestricted: restricted(dow!),
  };
}

/** Whether the spec's date part matches a calendar day (month 1-12, dom 1-31, dow 0 = Sunday). */
export function dayMatches(s: CronSpec, month: number, dom: number, dow: number): boolean {
  if (!s.months.has(month)) return false;
  if (s.domRestricted && s.dowRestricted) return s.doms.has(dom) || s.dows.has(dow);
  return s.doms.has(dom) && s.dows.has(dow);
}

/** Offset of a zone from UTC at an instant, minutes (east positive); 0 when the zone is unknown. */
export function zoneOffsetMinutes(timeZone: string, at: Date): number {
  try {
    const name = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? '';
    const m = /GMT([+-])(\d{1,2})(?::(\d{2}))?/.exec(name);
    if (!m) return 0;
    return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0));
  } catch {
    return 0;
  }
}

const DAY_MS = 86_400_000;
const HORIZON_DAYS = 28 * 366;

/**
 * The first minute (as a's local wall-clock time, `YYYY-MM-DD HH:MM`) at which both schedules fire, when
 * b's wall clock is `delta` minutes behind a's; undefined when they never do within the horizon.
 */
export function firstCommonMinute(a: CronSpec, b: CronSpec, delta: number, from: Date): string | undefined {
  const start = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate());
  const hours = [...a.hours].sort((x, y) => x - y);
  const minutes = [...a.minutes].sort((x, y) => x - y);
  // Quick exit: in the same frame the minute and hour sets must meet.
  if (delta === 0 && (![...a.minutes].some((m) => b.minutes.has(m)) || ![...a.hours].some((h) => b.hours.has(h)))) return undefined;
  for (let day = 0; day < HORIZON_DAYS; day++) {
    const t = start + day * DAY_MS;
    const d = new Date(t);
    if (!dayMatches(a, d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCDay())) continue;
    for (const h of hours) {
      for (const m of minutes) {
        // The same instant on b's wall clock (a "UTC" Date used as a plain calendar).
        const other = new Date(t + (h * 60 + m - delta) * 60_000);
        if (!b.minutes.has(other.getUTCMinutes()) || !b.hours.has(other.getUTCHours())) continue;
        if (!dayMatches(b, other.getUTCMonth() + 1, other.getUTCDate(), other.getUTCDay())) continue;
        return `${d.toISOString().slice(0, 10)} ${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
      }
    }
  }
  return undefined;
}

/** What the overlap check reads of a schedule. */
export interface ScheduleLike {
  name: string;
  cron: string;
  timezone: string;
  enabled: boolean;
}

/** Two enabled schedules that can fire in the same minute, with the first such minute in the first one's zone. */
export interface ScheduleOverlap {
  a: string;
  b: string;
  /** `YYYY-MM-DD HH:MM <zone of a>`. */
  example: string;
}

/**
 * Every pair of enabled schedules that can fire in the same minute (see the module comment for the rules).
 * A schedule whose expression this parser cannot read is skipped (the server validated it).
 */
export function scheduleOverlaps(schedules: readonly ScheduleLike[], from: Date = new Date()): ScheduleOverlap[] {
  const specs: Array<{ s: ScheduleLike; spec: CronSpec }> = [];
  for (const s of schedules) {
    if (!s.enabled) continue;
    try {
      specs.push({ s, spec: parseCronSpec(s.cron) });
    } catch {
      // Unreadable here: no warning for it.
    }
  }
  const year = from.getUTCFullYear();
  const seasons = [new Date(Date.UTC(year, 0, 15)), new Date(Date.UTC(year, 6, 15))];
  const out: ScheduleOverlap[] = [];
  for (let i = 0; i < specs.length; i++) {
    for (let j = i + 1; j < specs.length; j++) {
      const x = specs[i]!;
      const y = specs[j]!;
      const deltas = new Set(seasons.map((at) => zoneOffsetMinutes(x.s.timezone, at) - zoneOffsetMinutes(y.s.timezone, at)));
      for (const delta of deltas) {
        const when = firstCommonMinute(x.spec, y.spec, delta, from);
        if (when) {
          out.push({ a: x.s.name, b: y.s.name, example: `${when} ${x.s.timezone}` });
          break;
        }
      }
    }
  }
  return out;
}
