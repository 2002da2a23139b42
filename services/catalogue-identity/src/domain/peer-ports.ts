/**
 * The catalogue domain's ports to other services, with their HTTP implementations over the platform's typed
 * PeerClient (route table, signed identity, GET retries): the server registry (server list with connections, which
 * server is the default), the media-server client factory, and the index service (the inline full rebuild that ends a
 * cleaning run). Re-exported by `ports.ts` (the domain imports its ports from there).
 */
import { type IndexStatusDto, api, z } from '@polyphony/contracts';
import type { MediaServerClient, ServerConnection } from '@polyphony/media-servers';
import type { PeerClient } from '@polyphony/platform';

import type { ServerInfo } from '@polyphony/contracts';
/** A configured media server with its connection (the one schema: ServerInfoSchema in @polyphony/contracts). */
export type { ServerInfo };

/** The registry, as the sweeps and the cleaning use it. */
export interface RegistryPort {
  /** Every configured server (all are active). */
  listServers(): Promise<ServerInfo[]>;
}

/** Builds the media-server client of a connection (createMediaServerClient in production). */
export type MediaClientFactory = (connection: ServerConnection) => MediaServerClient;

/** How an inline index rebuild ended. */
export interface IndexRebuildResult {
  /** SUCCESS: the build serving this request went live; FAIL: it failed; TIMEOUT: still not done at the deadline. */
  readonly state: 'SUCCESS' | 'FAIL' | 'TIMEOUT';
  /** Task id of the index build that served the request. */
  readonly buildTaskId: string;
  /** Live generation and its song count after the wait. */
  readonly generation: number;
  readonly items: number;
  readonly waitedMs: number;
}

/** The index service, as the cleaning uses it. */
export interface IndexPort {
  /**
   * Requests a full rebuild and waits until the build that serves the request has finished (a request
   * during a running build is coalesced by the index into one follow-up build, which is the one
   * awaited). Never waits past `timeoutMs`; `signal` (the task's cancel/shutdown) ends the wait within one poll.
   * @throws when the index cannot be reached at the start (the caller reports it), or the signal's
   *   reason when it aborts (the requested build goes on in the index).
   */
  rebuildAndWait(options: { timeoutMs: number; pollMs: number; signal?: AbortSignal }): Promise<IndexRebuildResult>;
}

/** {@link RegistryPort} over `GET /internal/servers`. */
export class HttpRegistryPort implements RegistryPort {
  constructor(private readonly registry: PeerClient) {}

  async listServers(): Promise<ServerInfo[]> {
    return (await this.registry.call(api.internal.serversList)).servers;
  }
}

const BoardStatus = z.object({ state: z.string() }).passthrough();
const TERMINAL = new Set(['SUCCESS', 'FAIL', 'REVOKED']);

/**
 * {@link IndexPort} over the index's `POST /api/index/rebuild` and `GET /api/index/status`, and the
 * registry's task board (`GET /api/status/<id>`) for the build's outcome.
 *
 * Completion: the build `X` named by the 202 is done when the index is no longer building, or when it
 * was seen running and now another build runs. Outcome: the task board's final state of `X` (the index
 * publishes SUCCESS or FAIL there; a failed build never sends index.rebuild.completed.v1); when the
 * board has no final state within a grace period, a live generation newer than the one before the
 * request counts as success.
 */
export class HttpIndexPort implements IndexPort {
  constructor(
    private readonly index: PeerClient,
    private readonly registry: PeerClient,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
    /** How long to wait for the task board's final state after the build stopped, ms. */
    private readonly boardGraceMs = 10_000,
  ) {}

  async rebuildAndWait(options: { timeoutMs: number; pollMs: number; signal?: AbortSignal }): Promise<IndexRebuildResult> {
    const t0 = Date.now();
    const before = await this.index.call(api.features.status);
    const accepted = await this.index.call(api.features.rebuild, { body: {} });
    const buildId = accepted.task_id;
    const deadline = t0 + options.timeoutMs;
    let seenRunning = false;
    for (;;) {
      options.signal?.throwIfAborted();
      let status: z.infer<typeof IndexStatusDto> | undefined;
      try {
        status = await this.index.call(api.features.status);
      } catch {
        status = undefined; // transient: keep polling until the deadline
      }
      if (status) {
        if (status.task_id === buildId) seenRunning = true;
        const finished = !status.building || (seenRunning && status.task_id !== buildId);
        if (finished) {
          const board = await this.finalBoardState(buildId, Math.min(this.boardGraceMs, Math.max(0, deadline - Date.now())), options.pollMs);
          const state = board === 'SUCCESS' ? 'SUCCESS' : board !== undefined ? 'FAIL' : status.generation > before.generation ? 'SUCCESS' : 'FAIL';
          return { state, buildTaskId: buildId, generation: status.generation, items: status.items, waitedMs: Date.now() - t0 };
        }
      }
      if (Date.now() >= deadline) return { state: 'TIMEOUT', buildTaskId: buildId, generation: status?.generation ?? before.generation, items: status?.items ?? before.items, waitedMs: Date.now() - t0 };
      await this.sleep(options.pollMs);
    }
  }

  /** The board's final state of a task, polled for up to `graceMs`; undefined when none. */
  private async finalBoardState(taskId: string, graceMs: number, pollMs: number): Promise<string | undefined> {
    const until = Date.now() + graceMs;
    for (;;) {
      try {
        const s = await this.registry.callAs(api.tasks.status, BoardStatus, { params: { id: taskId } });
        if (TERMINAL.has(s.state)) return s.state;
      } catch {
        /* not on the board (yet) */
      }
      if (Date.now() >= until) return undefined;
      await this.sleep(Math.min(pollMs, 500));
    }
  }
}
