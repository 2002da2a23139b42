import { ConsumerQueues, type DeadLetterReplayRequest } from '@polyphony/contracts';
import { UpstreamUnavailableError, ValidationError, type Bus } from '@polyphony/platform';

type ConsumerQueue = (typeof ConsumerQueues)[number];

/**
 * Messages every retry gave up on, per work queue (`ConsumerQueues`, each with its `<queue>.dlq`), listed and put back.
 * @throws UpstreamUnavailableError (503) when the bus cannot list dead letters or the broker is unreachable
 */
export class DeadLetterService {
  constructor(private readonly bus: Bus) {}

  /** Up to `limit` dead letters of `queue`, or of every work queue: `[{ queue, count, messages }]`. */
  async list(queue: ConsumerQueue | undefined, limit: number) {
    const out = [];
    for (const q of queue ? [queue] : ConsumerQueues) {
      const messages = await this.call(() => this.bus.listDeadLetters?.(q, limit));
      out.push({ queue: q, count: messages.length, messages });
    }
    return out;
  }

  /**
   * Puts up to `r.limit` dead letters (of `r.queue`, or of every work queue; only `r.message_ids` when given) back in their
   * own queue with attempt 1. Returns how many per queue and in all.
   * @throws ValidationError (400) for a queue that is not a work queue
   */
  async replay(r: DeadLetterReplayRequest): Promise<{ replayed: Record<string, number>; total: number }> {
    if (r.queue && !(ConsumerQueues as readonly string[]).includes(r.queue)) throw new ValidationError(`Unknown queue ${r.queue}`);
    const ids = r.message_ids ? new Set(r.message_ids) : undefined;
    const replayed: Record<string, number> = {};
    let total = 0;
    for (const queue of r.queue ? [r.queue] : ConsumerQueues) {
      if (total >= r.limit) break;
      const n = await this.call(() => this.bus.replayDeadLetters?.(queue, r.limit - total, ids));
      replayed[queue] = n;
      total += n;
    }
    return { replayed, total };
  }

  /** Runs one bus call; a bus without dead-letter access or a broker fault is a 503. */
  private async call<T>(fn: () => Promise<T> | undefined): Promise<T> {
    try {
      const r = await fn();
      if (r === undefined) throw new UpstreamUnavailableError('This bus cannot list dead letters');
      return r;
    } catch (err) {
      if (err instanceof UpstreamUnavailableError) throw err;
      throw new UpstreamUnavailableError(`Message broker unavailable: ${(err as Error).message}`, 503, { cause: err });
    }
  }
}
