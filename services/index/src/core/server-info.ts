import type { RegistryPort, ServerInfo } from './ports';

/**
 * Media-server descriptions (type, credentials) from the registry, cached per server id until the
 * registry announces a change (registry.server.saved.v1 / deleted.v1 -> `invalidate`), so `/api/sync`
 * and the fingerprint do not call the registry per request. Failures are not cached; concurrent misses
 * share one call.
 */
export class ServerInfoCache implements RegistryPort {
  private readonly entries = new Map<string, Promise<ServerInfo>>();

  constructor(private readonly registry: RegistryPort) {}

  /** @throws AppError 404 (from the registry) when the server does not exist */
  getServer(id: string): Promise<ServerInfo> {
    let p = this.entries.get(id);
    if (!p) {
      p = this.registry.getServer(id);
      this.entries.set(id, p);
      p.catch(() => {
        if (this.entries.get(id) === p) this.entries.delete(id);
      });
    }
    return p;
  }

  /** Forgets one server (or all when `id` is undefined). */
  invalidate(id?: string): void {
    if (id === undefined) this.entries.clear();
    else this.entries.delete(id);
  }
}
