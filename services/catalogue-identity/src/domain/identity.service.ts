/**
 * Identity resolution as the HTTP API offers it: the stored tunables (settings), the scheme version the
 * catalogue is at and its band layout (set at start by the scheme service), the store transaction, and
 * the debounced mapping.changed event.
 */
import type { ResolveIdentityRequest, ResolveIdentityResponse } from '@polyphony/contracts';
import { UpstreamUnavailableError } from '@polyphony/platform';
import type { BandLayout } from './identity/bands';
import type { SchemeVersion } from './identity/scheme';
import type { CatalogueSettings } from '../settings';
import type { IdentityStore, ResolveResult } from '../store/identity.store';
import type { MappingChangedPublisher } from './mapping-events';

/** The scheme the catalogue is at: ids are minted with this version and looked up in this layout. */
export interface ActiveScheme {
  readonly version: SchemeVersion;
  readonly layout: BandLayout;
}

/** Resolves analysed provider files to canonical ids. */
export class IdentityService {
  private scheme?: ActiveScheme;

  constructor(
    private readonly store: IdentityStore,
    private readonly settings: CatalogueSettings,
    private readonly events: MappingChangedPublisher,
  ) {}

  /** Sets the active scheme (called once the start-time relabel check is done). */
  activate(scheme: ActiveScheme): void {
    this.scheme = scheme;
  }

  /** The active scheme, or undefined before start finished. */
  get activeScheme(): ActiveScheme | undefined {
    return this.scheme;
  }

  /**
   * Resolves one analysed provider file (see IdentityStore.resolve) with the current tunables and the
   * active scheme version, and schedules catalogue.mapping.changed.v1 for the server when a mapping
   * row was written.
   * @throws UpstreamUnavailableError (503) before the service finished starting; ConflictError (409,
   *   code server_deleted) for a deleted server.
   */
  async resolve(req: ResolveIdentityRequest): Promise<ResolveIdentityResponse & { result: ResolveResult }> {
    const scheme = this.scheme;
    if (!scheme) throw new UpstreamUnavailableError('catalogue identity is still starting');
    const tunables = await this.settings.get();
    const result = await this.store.resolve(req, { config: { ...tunables.identity, schemeVersion: scheme.version }, layout: scheme.layout });
    if (result.mappingWritten) this.events.changed(req.serverId, 'analysis');
    return { itemId: result.itemId, outcome: result.outcome, result };
  }
}
