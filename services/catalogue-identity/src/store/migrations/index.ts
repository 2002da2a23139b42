import { CreateCatalogue1732100000000 } from './1732100000000-CreateCatalogue';
import { CreateIdentity1732300000000 } from './1732300000000-CreateIdentity';
import { CreateBatchTasks1732500000000 } from './1732500000000-CreateBatchTasks';
import { AddLearnedFeatures1732700000000 } from './1732700000000-AddLearnedFeatures';
import { CreateMappingLog1732800000000 } from './1732800000000-CreateMappingLog';
import { CreateLyrics1732810000000 } from './1732810000000-CreateLyrics';

import { BatchTaskLeases1733400000000 } from './1733400000000-BatchTaskLeases';
import { EmbeddingVersions1733600000000 } from './1733600000000-EmbeddingVersions';
import { CreateFingerprints1733700000000 } from './1733700000000-CreateFingerprints';
import { BrowseOrder1733800000000 } from './1733800000000-BrowseOrder';
import { CreateImportRuns1734000000000 } from './1734000000000-CreateImportRuns';
import { MappingLibraries1734400000000 } from './1734400000000-MappingLibraries';
import { MappingFileStamps1734400000001 } from './1734400000001-MappingFileStamps';
import { SnapshotChangeFeed1734500000000 } from './1734500000000-SnapshotChangeFeed';
/** Migrations of the catalogue schema, in order (registered explicitly, never globbed). */
export const catalogueMigrations = [CreateCatalogue1732100000000, CreateIdentity1732300000000, CreateBatchTasks1732500000000, AddLearnedFeatures1732700000000, CreateMappingLog1732800000000, CreateLyrics1732810000000, BatchTaskLeases1733400000000, EmbeddingVersions1733600000000, CreateFingerprints1733700000000, BrowseOrder1733800000000, CreateImportRuns1734000000000, MappingLibraries1734400000000, MappingFileStamps1734400000001, SnapshotChangeFeed1734500000000];
