/**
 * Identity resolution as the HTTP API offers it: the stored tunables (settings), the scheme version the
 * catalogue is at and its band layout (set at start by the scheme service), the store transaction, and
 * the debounced mapping.changed event.
 */
import { embedderMismatchMessage, type ResolveIdentityRequest, type ResolveIdentityResponse, type VersionedEmbedding } from '@polyphony/contracts';
import { ConflictError, UpstreamUnavailableError } from '@polyphony/platform';
import type { BandLayout } from './identity/bands';
import { identityConfigForVersion } from './identity/constants';
import type { SchemeVersion } from './identity/scheme';
import type { CatalogueSettings } from '../settings';
import { ServedVersionChanged, type EmbeddingVersionStore, type IdentityResolveStore, type ResolveResult } from './ports';
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
    private readonly store: IdentityResolveStore,
    private readonly settings: CatalogueSettings,
    private readonly events: MappingChangedPublisher,
    private readonly versions: EmbeddingVersionStore,
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
   * Resolves one analysed provider file (see IdentityResolveStore.resolve) with the current tunables and the
   * active scheme version, and schedules catalogue.mapping.changed.v1 for the server when a mapping
   * row was written. With `changedFile` (issue 35) a mapped file whose stored stamp differs from the request's is
   * decided again (IdentityResolveStore.resolve, PgIdentityRepository.reassign): the answer then carries `reanalysis`
   * (`same`: mapping kept, stamp updated; `moved`: mapping moved from `previousItemId`).
   *
   * Embedder versions (embedding-switch.repository.ts): the request's primary version becomes the catalogue's target;
   * the decision uses the request's vector of the SERVED version (primary or alternate) with that version's
   * calibrated cosine threshold (identityConfigForVersion), so the gate compares vectors of one version only; the
   * request's other vectors are kept as alternates of the song.
   * @throws UpstreamUnavailableError (503) before the service finished starting; ConflictError (409,
   *   code server_deleted) for a deleted server; ConflictError (409, code embedder_version_mismatch) when the
   *   request carries no vector of the served version and the catalogue cannot switch to its version (some songs
   *   have no vector of it).
   */
  async resolve(req: ResolveIdentityRequest): Promise<ResolveIdentityResponse & { result: ResolveResult }> {
    const scheme = this.scheme;
    if (!scheme) throw new UpstreamUnavailableError('catalogue identity is still starting');
    const tunables = await this.settings.get();
    const vectors: VersionedEmbedding[] = [{ embedderVersion: req.embedderVersion, embedding: req.embedding }, ...(req.alternateEmbeddings ?? [])];
    for (let attempt = 1; ; attempt++) {
      let state = await this.versions.noteTarget(req.activeEmbedderVersion ?? req.embedderVersion);
      let served = vectors.find((v) => v.embedderVersion === state.servedVersion);
      if (!served) {
        // The workers changed version (e.g. the model was removed after a switch): switch back when covered.
        await this.versions.promoteIfCovered();
        state = await this.versions.state();
        served = vectors.find((v) => v.embedderVersion === state.servedVersion);
      }
      if (!served) {
        throw new ConflictError(
          embedderMismatchMessage(String(state.servedVersion), vectors.map((v) => v.embedderVersion)),
          'embedder_version_mismatch',
        );
      }
      const alternates = vectors.filter((v) => v !== served);
      const config = identityConfigForVersion({ ...tunables.identity, schemeVersion: scheme.version }, served.embedderVersion);
      try {
        const result = await this.store.resolve({ ...req, embedding: served.embedding, embedderVersion: served.embedderVersion, alternateEmbeddings: alternates }, { config, layout: scheme.layout });
        if (result.mappingWritten) this.events.changed(req.serverId, 'analysis');
        if (state.targetVersion !== state.servedVersion) this.versions.scheduleCheck();
        return { itemId: result.itemId, outcome: result.outcome, ...(result.reanalysis ? { reanalysis: result.reanalysis, previousItemId: result.previousItemId } : {}), result };
      } catch (err) {
        // The catalogue switched versions between the choice above and the decision's locks: choose again.
        if (!(err instanceof ServedVersionChanged) || attempt >= 3) throw err;
      }
    }
  }
}
