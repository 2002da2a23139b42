import { api } from '@polyphony/contracts';
import { isTransientFault, type PeerClient, ValidationError } from '@polyphony/platform';

/** The fields of the registry's answer the gateway uses (`api.internal.serversResolve`). */
interface Resolved {
  id: string;
  name: string;
  server_type: string;
}

/** Longest accepted `server` value (display names are at most 100 characters, ids are UUIDs). */
const MAX_SERVER_PARAM = 200;

/** How long a resolved server may still be used while the registry cannot answer (default of `staleMs`). */
export const RESOLVE_STALE_MS = 10 * 60_000;

/**
 * Resolves the optional `server` parameter (display name or internal id) to the registry's
 * internal id, once per request at the gateway. Absent means the default server. Results are
 * cached for `ttlMs` (default 2 s) so a burst of requests costs one registry call.
 *
 * Outages (issue 36): concurrent look-ups of one key share one registry call (single flight). When the registry
 * cannot answer because of a transient fault (its database down: it answers 503; it is unreachable), an answer
 * cached less than `staleMs` ago (default 10 min) is used instead of failing the request: servers are created,
 * renamed and deleted through the registry, which cannot change them while its database is down, so the cached
 * answer is the current one. While the registry keeps failing, a stale answer is given at once and the registry
 * is asked again in the background, at most one call per key at a time. A key never resolved before, or a
 * permanent error (a 4xx of the registry), still fails the request (503 with `Retry-After` for the fault).
 */
export class ServerResolver {
  private cache = new Map<string, { at: number; value: Resolved | null }>();
  private inflight = new Map<string, Promise<Resolved | null>>();
  /** Set while the last registry call failed on a transient fault (cleared by the next answer). */
  private failing = false;

  constructor(
    /** The registry's peer client (`api.internal.serversResolve`). */
    private readonly registry: PeerClient,
    private readonly ttlMs = 2000,
    private readonly staleMs = RESOLVE_STALE_MS,
  ) {}

  /** Returns the resolved server, undefined when none is configured (only when `server` is absent); 400 for an unknown server. */
  async resolve(server: string | undefined): Promise<Resolved | undefined> {
    // A display name or id is short; anything longer is refused here rather than forwarded.
    if (server !== undefined && server.length > MAX_SERVER_PARAM) throw new ValidationError(`The server parameter is longer than ${MAX_SERVER_PARAM} characters`);
    const key = server ?? '';
    const hit = this.cache.get(key);
    let value: Resolved | null;
    if (hit && Date.now() - hit.at < this.ttlMs) {
      value = hit.value;
    } else if (hit && this.failing && Date.now() - hit.at < this.staleMs) {
      // The registry is failing: answer from the stale entry now, ask again in the background.
      this.refresh(key, server).catch(() => undefined);
      value = hit.value;
    } else {
      value = await this.refresh(key, server);
    }
    if (!value && server !== undefined) throw new ValidationError(`Unknown server "${server}": give a configured server's display name or id`);
    return value ?? undefined;
  }

  /** One registry call per key at a time; a transient failure falls back to an entry younger than `staleMs`. */
  private refresh(key: string, server: string | undefined): Promise<Resolved | null> {
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.registry
        .call(api.internal.serversResolve, { query: { server } })
        .then((res) => {
          this.failing = false;
          if (this.cache.size > 1000) this.cache.clear();
          this.cache.set(key, { at: Date.now(), value: res.server });
          return res.server;
        })
        .catch((err: unknown) => {
          if (!isTransientFault(err)) throw err;
          this.failing = true;
          const stale = this.cache.get(key);
          if (stale && Date.now() - stale.at < this.staleMs) return stale.value;
          throw err;
        })
        .finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /**
   * The cached answer of `resolve(server)` when it is fresh and is a server or "none configured" (no registry call, no
   * promise: the forwarder forwards in the same turn); undefined when `resolve` must run (not cached, expired, too
   * long, or an unknown server, whose 400 `resolve` throws).
   */
  peek(server: string | undefined): { server: Resolved | undefined } | undefined {
    if (server !== undefined && server.length > MAX_SERVER_PARAM) return undefined;
    const hit = this.cache.get(server ?? '');
    if (!hit || Date.now() - hit.at >= this.ttlMs) return undefined;
    if (!hit.value && server !== undefined) return undefined;
    return { server: hit.value ?? undefined };
  }

  invalidate(): void {
    this.cache.clear();
  }
}
