/**
 * The fixture every media-server kind gives the shared contract suite (media-servers.contract.int.test.ts):
 * how to start its fake, which credentials it takes, and what the kind is expected to report where
 * the kinds legitimately differ (units, id shapes, paging, batch sizes). Anything only one kind has
 * (Lyrion's player mode, Navidrome's disabled downloads, Plex PIN linking…) goes in `extras`.
 */
import type { FakeCatalogue, FakeTrack, RecordedRequest, StartedFake } from '@polyphony/testkit';
import type { ClientOptions } from '../../src/options';
import type { ConnectionTestResult, LibraryInfo, MediaServerClient, ProviderTrack, ServerConnection, ServerType } from '../../src/types';
import type { Expectation } from '../helpers';

/** What every fake offers the suite. */
export interface ContractFake {
  start(): Promise<StartedFake>;
  failAfterPages(pages: number | null): void;
  readonly requests: RecordedRequest[];
  readonly core: { clearRequests(): void };
}

/** The started small (real music) and big (synthetic) fakes of one kind. */
export interface FakePair<F> {
  fake: F;
  server: StartedFake;
  bigFake: F;
  bigServer: StartedFake;
}

/** Handed to `extras`: the running fakes and client makers of the kind's suite. */
export interface KindContext<F> {
  wesnoth: FakeCatalogue;
  synthetic: FakeCatalogue;
  /** The started pair (read inside tests or hooks, not at registration time). */
  pair(): FakePair<F>;
  /** A client of the small fake, with connection overrides and client options. */
  client(over?: Partial<ServerConnection>, opts?: ClientOptions): MediaServerClient;
  /** A client of the big fake. */
  bigClient(over?: Partial<ServerConnection>, opts?: ClientOptions): MediaServerClient;
  /** A client of any started fake of this kind. */
  connect(fake: F, server: StartedFake, over?: Partial<ServerConnection>, opts?: ClientOptions): MediaServerClient;
}

export interface KindFixture<F extends ContractFake> {
  type: ServerType;
  /** Suite title, e.g. `JellyfinClient against the fake Jellyfin`. */
  title: string;
  /** Size of the synthetic catalogue (Plex needs more than two 1,000-track pages in one section). */
  syntheticSize: number;
  make(catalogue: FakeCatalogue): F;
  creds(fake: F, url: string): Record<string, string>;
  /** Credentials the fake refuses; undefined when the kind has none by default (Lyrion: see extras). */
  badCreds?(fake: F, url: string): Record<string, string>;
  /** The kind's provider id of a catalogue track (string form). */
  idOf(fake: F, track: FakeTrack | string): string;
  /** Provider ids of the big fake's i-th synthetic track. */
  bigIdAt(fake: F, index: number): string;
  connection: {
    /** Clear recorded requests before the test (so `check` sees only its calls). */
    clearFirst?: boolean;
    serverName?: string;
    version?(fake: F): string;
    /** Full entries (compared whole) or ids (compared in order). */
    libraries(fake: F): LibraryInfo[] | string[];
    sampleTrackCount: number;
    pathsLookAbsolute: boolean;
    /** Kind-specific checks on the recorded requests (auth headers, salts…). */
    check?(fake: F, r: ConnectionTestResult): void;
  };
  enumeration: {
    expectation(fake: F, t: FakeTrack): Expectation;
    idPattern?: RegExp;
    integerDurations?: boolean;
  };
  paging: {
    musicLibraries?(fake: F): string[];
    /** Expected ids (sorted comparison); default every synthetic track. */
    expectedIds?(fake: F, synthetic: FakeCatalogue): string[];
    pages: number;
    /** What identifies each page request, in order (offsets, `[start, count]` pairs…). */
    pageMarks(fake: F): unknown[];
    expectedMarks: unknown[];
    check?(fake: F): void;
    /** Library id each listed track carries, by provider id (issue 34); absent: the kind records none (Lyrion). */
    libraryOf?(fake: F, synthetic: FakeCatalogue): Map<string, string>;
    /** Every listed track carries a file stamp (`size:<bytes>`, issue 35); absent: none does. */
    fileStamps?: boolean;
  };
  /** Library filter: the filter value and the ids it must yield (absent: covered by `paging`). */
  filter?: {
    musicLibraries(fake: F, synthetic: FakeCatalogue): string[];
    expectedIds(fake: F, synthetic: FakeCatalogue): string[];
    check?(items: ProviderTrack[], synthetic: FakeCatalogue): void;
  };
  /** `afterPages`: the fake fails after this many page requests (default 1). */
  failure: { musicLibraries?: string[]; yielded: number; afterPages?: number };
  download: { track: string; check?(fake: F): void };
  playlist: {
    name: string;
    size: number;
    /** The i-th id of the playlist written to the big fake. */
    idAt(fake: F, i: number, synthetic: FakeCatalogue): string;
    /** What the big fake stores (ids as strings). */
    stored(fake: F): Array<{ id: string; trackIds: string[] }>;
    /** Whether `listPlaylists` reports a track count. */
    listsTrackCount: boolean;
    /** Checks the write requests (batch sizes and shapes). */
    checkWrites(fake: F): void;
  };
  artists: { names(wesnoth: FakeCatalogue): Set<string> };
  history: { order: 'recent' | 'most_played'; check?(fake: F): void };
  /** Tests only this kind has, registered inside the kind's describe. */
  extras?(ctx: KindContext<F>): void;
}
