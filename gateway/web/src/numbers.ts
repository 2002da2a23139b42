/** Small number formatting helpers (pure, unit-tested). */

/** `part` of `whole` as a whole percentage ("0%" when whole is 0). */
export function pct(part: number, whole: number): string {
  if (!whole) return '0%';
  return `${Math.round((100 * part) / whole)}%`;
}

/** Clamps a number into [lo, hi]; NaN becomes lo. */
export function clamp(v: number, lo: number, hi: number): number {
  return Number.isNaN(v) ? lo : Math.min(hi, Math.max(lo, v));
}

/** Seconds as "1 h 02 min", "3 min 05 s" or "12 s". */
export function fmtDuration(seconds: number | null | undefined): string {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${s} s`;
}
