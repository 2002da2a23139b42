import { IvfNotReadyError } from './errors';
import { IvfBuildOptions, IvfBuildResult, VectorSource, buildIvfIndex } from './ivf-build';
import { IvfIndex } from './ivf-index';

/**
 * Holds the live generation of the shared index and replaces it atomically.
 *
 * Readers call `current()` (or `require()`) once per request and use that snapshot for the whole request
 * (mask, search, id mapping), so a swap in between can never mix rows of two generations. `publish` is a
 * single reference assignment, so every query is answered entirely by the old or entirely by the new
 * generation; the old one is garbage-collected when the last request holding it finishes.
 * Rebuilds are serialised: a `rebuild` started while another runs waits for it, then builds on top.
 * A failed or aborted build leaves the previous generation live.
 */
export class LiveIvfIndex {
  private live: IvfIndex | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private building = 0;

  constructor(initial?: IvfIndex) {
    this.live = initial;
  }

  /** The live generation, or undefined before the first publish. */
  current(): IvfIndex | undefined {
    return this.live;
  }

  /** The live generation. @throws IvfNotReadyError before the first publish. */
  require(): IvfIndex {
    if (!this.live) throw new IvfNotReadyError();
    return this.live;
  }

  /** True while a rebuild is running or queued. */
  get isBuilding(): boolean {
    return this.building > 0;
  }

  /** Makes `next` the live generation (e.g. after `IvfIndex.restore` at start-up); returns the previous one. */
  publish(next: IvfIndex): IvfIndex | undefined {
    const previous = this.live;
    this.live = next;
    return previous;
  }

  /**
   * Builds a new generation from `source` and publishes it when (and only if) the build, including every
   * awaited `onCell`/`onTrained` call, succeeded. `options.generation` defaults to the live generation + 1.
   * Queries keep being served from the old generation meanwhile (the build yields to the event loop).
   */
  rebuild(source: VectorSource, options: IvfBuildOptions = {}): Promise<IvfBuildResult> {
    this.building++;
    const run = this.chain.then(async () => {
      const generation = options.generation ?? (this.live ? this.live.generation + 1 : 1);
      const result = await buildIvfIndex(source, { ...options, generation });
      this.publish(result.index);
      return result;
    });
    const settled = run.finally(() => {
      this.building--;
    });
    this.chain = settled.catch(() => undefined);
    return settled;
  }
}
