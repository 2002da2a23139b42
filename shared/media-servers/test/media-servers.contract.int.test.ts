/**
 * One contract suite for the five media-server clients, each against its spec-faithful fake
 * (shared/testkit): the same behaviour checked for every kind, with the kind's differences in its
 * fixture (contract/*.fixture*.ts). Navidrome also runs against a real supysonic
 * (navidrome.supysonic.int.test.ts).
 */
import { embyFixture, jellyfinFixture } from './contract/jellyfin-family.fixtures';
import { lyrionFixture } from './contract/lyrion.fixture';
import { navidromeFixture } from './contract/navidrome.fixture';
import { plexFixture } from './contract/plex.fixture';
import { mediaServerContract } from './contract/suite';

// The cases and their assertions live in contract/suite.ts; this guard fails any case of it that asserts nothing.
beforeEach(() => expect.hasAssertions());

mediaServerContract(jellyfinFixture);
mediaServerContract(embyFixture);
mediaServerContract(navidromeFixture);
mediaServerContract(lyrionFixture);
mediaServerContract(plexFixture);
