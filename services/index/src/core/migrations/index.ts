import { CreateIndex1732100000000 } from './1732100000000-CreateIndex';
import { CreateIndexTables1732100000001 } from './1732100000001-CreateIndexTables';
import { AddTrackFeatures1732800000000 } from './1732800000000-AddTrackFeatures';
import { AddSemantic1732810000001 } from './1732810000001-AddSemantic';
import { AddSavedAlchemy1732900000000 } from './1732900000000-AddSavedAlchemy';
import { AddQuantisedCodes1733000000000 } from './1733000000000-AddQuantisedCodes';
import { AddReplicas1733400000000 } from './1733400000000-AddReplicas';
import { AddMapMethod1733500000000 } from './1733500000000-AddMapMethod';
import { AddEmbedderVersions1733700000000 } from './1733700000000-AddEmbedderVersions';
import { AddLiveDeltas1734000000000 } from './1734000000000-AddLiveDeltas';
import { AddDeltaMappingSeq1734900000000 } from './1734900000000-AddDeltaMappingSeq';
import { AddRadioCreators1734350000000 } from './1734350000000-AddRadioCreators';
import { AddBuildRuns1734400000000 } from './1734400000000-AddBuildRuns';
import { AddBallBasis1734500000000 } from './1734500000000-AddBallBasis';
import { AddBuildLineage1734700000000 } from './1734700000000-AddBuildLineage';
import { AddBuildFeedMark1734800000000 } from './1734800000000-AddBuildFeedMark';

/** Migrations of the index schema, in order (registered explicitly, never globbed). */
export const indexMigrations = [CreateIndex1732100000000, CreateIndexTables1732100000001, AddTrackFeatures1732800000000, AddSemantic1732810000001, AddSavedAlchemy1732900000000, AddQuantisedCodes1733000000000, AddReplicas1733400000000, AddMapMethod1733500000000, AddEmbedderVersions1733700000000, AddLiveDeltas1734000000000, AddRadioCreators1734350000000, AddBuildRuns1734400000000, AddBallBasis1734500000000, AddBuildLineage1734700000000, AddBuildFeedMark1734800000000, AddDeltaMappingSeq1734900000000];
