import { api } from '@polyphony/contracts';
import { type PeerClient, ValidationError } from '@polyphony/platform';

/** The fields of the registry's answer the gateway uses (`api.internal.serversResolve`). */
interface Resolved {
  id: string;
  name: string;
  server_type: string;
}

/** Longest accepted `server` value (display names are at most 100 characters, ids are UUIDs). */
const MAX_SERVER_PARAM = 200;

/**
 * Resolves the optional `server` parameter (display name or internal id) to the registry's
 * internal id, once per request at the gateway. Absent means the default server. Results are
 * cached for `ttlMs` (default 2 s) so a burst of requests costs one registry call.
 */
export class ServerResolver {
  private cache = new Map<string, { at: number; value: Resolved | null }>();

  constructor(
    /** The registry's peer client (`api.internal.serversResolve`). */
    private readonly registry: PeerClient,
    private readonly ttlMs = 2000,
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
    } else {
      const res = await this.registry.call(api.internal.serversResolve, { query: { server } });
      value = res.server;
      if (this.cache.size > 1000) this.cache.clear();
      this.cache.set(key, { at: Date.now(), value });
    }
    if (!value && server !== undefined) throw new ValidationError(`Unknown server "${server}": give a configured server's display name or id`);
    return value ?? undefined;
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
