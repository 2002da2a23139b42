import type { CellRecord } from './ports';

/**
 * Writes a build's completed IVF cells (`index.cells`) in the background while the build goes on (issue 35: at 1M
 * songs the cells are ~800 MiB of float32 vectors; awaiting every write inside the IVF build's emit left Node idle
 * ~9 s of the 1 % rebuild while PostgreSQL wrote, time the map, artist and quantisation phases can use instead).
 *
 * - `add` takes a cell by reference, not a copy: its row ids and vectors must be views that stay unchanged until
 *   `done` (the built index's arranged arrays are: the quantisation phase reads them, never writes them).
 * - Cells are grouped into batches of about `flushBytes` and written one batch at a time, in emit order, by `save`.
 * - After a failed write no further batch is written; `add` throws it from then on, and `done` rethrows it.
 * - `done` must be awaited before anything that needs the cells stored (the generation's activation); `settle` on a
 *   failed build, so that no write outlives it.
 */
export class CellWriter {
  private pending: CellRecord[] = [];
  private pendingBytes = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: { err: unknown } | undefined;
  /** Set by `settle`: batches not yet started are skipped. */
  private stopped = false;
  /** Batches handed to `save` so far (tests, notes). */
  batches = 0;

  /**
   * @param save writes one batch of cells (GenerationStore.saveCells of the build's generation)
   * @param flushBytes bytes of vectors and row ids per batch (BuildSettings.cellFlushBytes)
   */
  constructor(
    private readonly save: (cells: CellRecord[]) => Promise<void>,
    private readonly flushBytes: number,
  ) {}

  /** Queues one cell; a full batch starts its write behind the ones before it. @throws the first failed write's error */
  add(cell: CellRecord): void {
    if (this.failure) throw this.failure.err;
    this.pending.push(cell);
    this.pendingBytes += cell.vectors.byteLength + cell.rowIds.byteLength;
    if (this.pendingBytes >= this.flushBytes) this.flush();
  }

  /** Writes what is queued and waits for every write. @throws the first failed write's error */
  async done(): Promise<void> {
    this.flush();
    await this.chain;
    if (this.failure) throw this.failure.err;
  }

  /**
   * Waits for the batch being written (never throws); queued cells and batches not yet started are dropped: a failed
   * build's last step.
   */
  async settle(): Promise<void> {
    this.stopped = true;
    this.pending = [];
    this.pendingBytes = 0;
    await this.chain;
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    this.batches++;
    this.chain = this.chain.then(async () => {
      if (this.failure || this.stopped) return;
      try {
        await this.save(batch);
      } catch (err) {
        this.failure = { err };
      }
    });
  }
}

/**
 * The writes of one build's stored parts (cells, artist mixtures and links, codes) that run in the background while
 * the build goes on (issue 35): each is tracked from its start (a failure is kept, never an unhandled rejection) and
 * all are awaited once, before the activation makes the generation loadable (`done`), or on a failed build (`settle`).
 */
export class BackgroundStores {
  private readonly started: Array<Promise<void>> = [];
  private failure: { err: unknown } | undefined;

  /** Tracks a write already started. */
  add(write: Promise<unknown>): void {
    this.started.push(
      write.then(
        () => undefined,
        (err: unknown) => {
          this.failure ??= { err };
        },
      ),
    );
  }

  /** Waits for every tracked write. @throws the first failure (in order of failing) */
  async done(): Promise<void> {
    await Promise.all(this.started);
    if (this.failure) throw this.failure.err;
  }

  /** Waits for every tracked write; never throws. */
  async settle(): Promise<void> {
    await Promise.all(this.started);
  }
}
