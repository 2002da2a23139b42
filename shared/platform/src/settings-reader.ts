import type { Logger } from './logger';

export type SettingValue = string | number | boolean | null;

/**
 * The settings one service applies, read from the registry (`GET /internal/settings/:owner`, see
 * `OwnerSettingsDto` in @polyphony/contracts) through a cache of `ttlMs` (default 5 s): an admin's
 * change (`PUT /api/config`) applies on every replica within that time, without a restart and
 * without a per-request call. Concurrent reads share one fetch. When the registry cannot be reached
 * the last values read (or the defaults) stay in effect and one warning is logged per failure
 * streak: a query never fails because its defaults could not be refreshed.
 */
export class SettingsReader {
  private values: Record<string, SettingValue>;
  private fetchedAt = -Infinity;
  private inflight: Promise<Record<string, SettingValue>> | undefined;
  private failing = false;

  constructor(
    private readonly fetchValues: () => Promise<Record<string, SettingValue>>,
    defaults: Record<string, SettingValue>,
    private readonly logger?: Logger,
    private readonly ttlMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {
    this.values = { ...defaults };
  }

  /** Every value (cached). */
  async all(): Promise<Record<string, SettingValue>> {
    if (this.now() - this.fetchedAt < this.ttlMs) return this.values;
    this.inflight ??= this.refresh().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  /** A numeric setting; `fallback` when unset or not a finite number. */
  async number(key: string, fallback: number): Promise<number> {
    const v = (await this.all())[key];
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    return Number.isFinite(n) ? n : fallback;
  }

  private async refresh(): Promise<Record<string, SettingValue>> {
    try {
      const fresh = await this.fetchValues();
      this.values = { ...this.values, ...fresh };
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger?.warn('settings could not be read from the registry; the last known values stay in effect', { error: (err as Error).message });
      this.failing = true;
    }
    // A failed read is retried after the same interval (no request storm while the registry is away).
    this.fetchedAt = this.now();
    return this.values;
  }
}
