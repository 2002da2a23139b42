import type { Logger } from '@polyphony/platform';

/** Tunables of an UpstreamPool. */
export interface UpstreamPoolOptions {
  /** Interval of the `/readyz` probe of every replica, ms (default 1000). */
  probeIntervalMs?: number;
  /** Probe timeout, ms (default 800). */
  probeTimeoutMs?: number;
}

/**
 * Several replicas of one service (a comma-separated service URL, e.g. `INDEX_URL=http://index-a:8080,
 * http://index-b:8080`), balanced over the replicas whose `/readyz` answered 200 at the last probe (every
 * `probeIntervalMs`): the one with the fewest requests in flight from this gateway (`acquire` / `release`;
 * ties in round-robin order), so a replica that stalls (a GC pause, descheduled on a busy host) stops receiving
 * new requests until it has caught up, instead of collecting every other one as plain round-robin would (issue 19
 * tail latency: "join the shortest queue"). A replica that refuses or resets a connection is marked down at once
 * (the proxy then retries the request on another one) until a probe finds it ready again. When no replica
 * is known ready, every replica is tried in turn (a probe may simply not have run yet).
 *
 * In Kubernetes, one Service URL in front of ready pods does the same job (see k8s/base/index.yaml); the
 * list is for Compose, bare metal and the benchmarks.
 */
export class UpstreamPool {
  readonly urls: readonly string[];
  private readonly ready: boolean[];
  /** Requests in flight per replica (`acquire` minus `release`). */
  private readonly inflight: number[];
  private next = 0;
  private timer?: NodeJS.Timeout;
  private readonly probeIntervalMs: number;
  private readonly probeTimeoutMs: number;

  constructor(
    urls: readonly string[],
    private readonly logger: Logger,
    options: UpstreamPoolOptions = {},
  ) {
    if (urls.length === 0) throw new Error('an upstream pool needs at least one URL');
    this.urls = urls;
    this.ready = urls.map(() => true);
    this.inflight = urls.map(() => 0);
    this.probeIntervalMs = options.probeIntervalMs ?? 1000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 800;
  }

  /** Splits a comma-separated URL list (blanks ignored). */
  static parse(list: string): string[] {
    return list
      .split(',')
      .map((u) => u.trim().replace(/\/+$/, ''))
      .filter((u) => u.length > 0);
  }

  /** Number of replicas. */
  get size(): number {
    return this.urls.length;
  }

  /**
   * The next replica to use, skipping `tried`; undefined when every replica was tried. Ready replicas first;
   * among them the fewest requests in flight, ties in round-robin order. Does not count the request: see `acquire`.
   */
  pick(tried?: ReadonlySet<string>): string | undefined {
    const j = this.choose(tried);
    return j < 0 ? undefined : this.urls[j];
  }

  /** `pick`, counting the request in flight on the chosen replica until `release(url)`. */
  acquire(tried?: ReadonlySet<string>): string | undefined {
    const j = this.choose(tried);
    if (j < 0) return undefined;
    this.inflight[j]!++;
    return this.urls[j];
  }

  /** Ends a request counted by `acquire` (once per acquire: its answer ended, or it failed). */
  release(url: string): void {
    const i = this.urls.indexOf(url);
    if (i >= 0 && this.inflight[i]! > 0) this.inflight[i]!--;
  }

  /** Requests in flight per replica, in `urls` order (tests, diagnostics). */
  inFlight(): number[] {
    return [...this.inflight];
  }

  private choose(tried: ReadonlySet<string> | undefined): number {
    const n = this.urls.length;
    for (const wantReady of [true, false]) {
      let best = -1;
      for (let i = 0; i < n; i++) {
        const j = (this.next + i) % n;
        if (this.ready[j] !== wantReady || tried?.has(this.urls[j]!)) continue;
        if (best < 0 || this.inflight[j]! < this.inflight[best]!) best = j;
      }
      if (best >= 0) {
        this.next = (best + 1) % n;
        return best;
      }
    }
    return -1;
  }

  /** Marks a replica down until the next successful probe (called on a connection failure). */
  markDown(url: string): void {
    const i = this.urls.indexOf(url);
    if (i >= 0 && this.ready[i]) {
      this.ready[i] = false;
      this.logger.warn('upstream replica marked down', { url });
    }
  }

  /** Starts the periodic readiness probes (idempotent; the timer does not keep the process alive). */
  start(): void {
    if (this.timer || this.urls.length < 2) return;
    this.timer = setInterval(() => void this.probeAll(), this.probeIntervalMs);
    this.timer.unref();
    void this.probeAll();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Probes every replica's `/readyz` once. */
  async probeAll(): Promise<void> {
    await Promise.all(
      this.urls.map(async (url, i) => {
        let ok = false;
        try {
          const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(this.probeTimeoutMs) });
          ok = res.status === 200;
          await res.arrayBuffer();
        } catch {
          ok = false;
        }
        if (ok !== this.ready[i]) this.logger.info(ok ? 'upstream replica ready' : 'upstream replica not ready', { url });
        this.ready[i] = ok;
      }),
    );
  }
}

/** Errors that mean the request never got an answer from that replica, so another one may take it. */
export function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED' || code === 'EHOSTUNREACH' || (err as Error)?.message === 'socket hang up';
}
