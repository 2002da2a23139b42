/** User + system CPU time of this process (all threads), ms. */
function cpuNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** `cleanup`: the older builds' rows deleted after the new generation is served (not part of the time to serve it). */
export type BuildPhase = 'snapshot' | 'build' | 'projection' | 'artists' | 'quantise' | 'activate' | 'cleanup';

/** Wall and process-CPU time of a build's consecutive phases: `end(phase)` closes a phase where the last one ended. */
export class PhaseClock {
  private readonly t0 = performance.now();
  private readonly c0 = cpuNow();
  private t = this.t0;
  private c = this.c0;
  readonly wallMs = { snapshot: 0, build: 0, projection: 0, artists: 0, quantise: 0, activate: 0, cleanup: 0, total: 0 };
  readonly cpuMs = { snapshot: 0, build: 0, projection: 0, artists: 0, quantise: 0, activate: 0, cleanup: 0, total: 0 };

  end(phase: BuildPhase): void {
    const t = performance.now();
    const c = cpuNow();
    this.wallMs[phase] = t - this.t;
    this.cpuMs[phase] = c - this.c;
    this.wallMs.total = t - this.t0;
    this.cpuMs.total = c - this.c0;
    this.t = t;
    this.c = c;
  }
}
