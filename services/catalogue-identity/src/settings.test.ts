import { DEFAULT_IDENTITY_CONFIG } from './domain/identity/constants';
import { parseCatalogueSettings } from './settings';
import { loadCatalogueConfig } from './config';

describe('catalogue settings', () => {
  it('When nothing is stored, then the domain defaults apply and orphan deletion is off', () => {
    const { tunables, problems } = parseCatalogueSettings({});
    expect(problems).toEqual([]);
    expect(tunables.identity).toEqual(DEFAULT_IDENTITY_CONFIG);
    expect(tunables.cleaningCatalogue).toBe(false);
  });

  it('When values are stored, then they are parsed with their types', () => {
    const { tunables, problems } = parseCatalogueSettings({
      DUPLICATE_DISTANCE_THRESHOLD_COSINE: '0.05',
      DURATION_TOLERANCE_SECONDS: '2.5',
      CHROMAPRINT_GATE_ENABLED: 'off',
      CATALOGUE_ID_SCHEME_VERSION: '3',
      CLEANING_CATALOGUE: 'TRUE',
    });
    expect(problems).toEqual([]);
    expect(tunables.identity).toMatchObject({ duplicateDistanceThresholdCosine: 0.05, durationToleranceSeconds: 2.5, chromaprintGateEnabled: false, schemeVersion: 3 });
    expect(tunables.cleaningCatalogue).toBe(true);
  });

  it('When a value is invalid, then only that field falls back to its default and the problem is reported', () => {
    const { tunables, problems } = parseCatalogueSettings({ CATALOGUE_ID_SCHEME_VERSION: '7', DURATION_TOLERANCE_SECONDS: 'abc', CHROMAPRINT_GATE_ENABLED: 'maybe', DUPLICATE_DISTANCE_THRESHOLD_COSINE: '0.2' });
    expect(tunables.identity.schemeVersion).toBe(DEFAULT_IDENTITY_CONFIG.schemeVersion);
    expect(tunables.identity.durationToleranceSeconds).toBe(DEFAULT_IDENTITY_CONFIG.durationToleranceSeconds);
    expect(tunables.identity.chromaprintGateEnabled).toBe(DEFAULT_IDENTITY_CONFIG.chromaprintGateEnabled);
    expect(tunables.identity.duplicateDistanceThresholdCosine).toBe(0.2);
    expect(problems).toHaveLength(3);
  });

  it('When the environment seeds an invalid value, then the config load fails fast naming the key', () => {
    expect(() => loadCatalogueConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/db', CATALOGUE_ID_SCHEME_VERSION: '1' })).toThrow(/CATALOGUE_ID_SCHEME_VERSION/);
    const ok = loadCatalogueConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/db', DURATION_TOLERANCE_SECONDS: '1.5', PGHOST: undefined });
    expect(ok.seedEnv).toEqual({ DURATION_TOLERANCE_SECONDS: '1.5' });
    expect(ok.mappingChangedDebounceMs).toBe(2000);
  });

});
