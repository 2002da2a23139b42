import { CreateAnalysis1732100000000 } from './1732100000000-CreateAnalysis';
import { CreateAnalysisRuns1732100000001 } from './1732100000001-CreateAnalysisRuns';
import { RunLeases1732100000002 } from './1732100000002-RunLeases';
import { TrackClaims1732100000003 } from './1732100000003-TrackClaims';
import { ExclusionDetails1732100000004 } from './1732100000004-ExclusionDetails';
import { ChangeWatch1734500000000 } from './1734500000000-ChangeWatch';

/** Migrations of the analysis schema, in order (registered explicitly, never globbed). */
export const analysisMigrations = [CreateAnalysis1732100000000, CreateAnalysisRuns1732100000001, RunLeases1732100000002, TrackClaims1732100000003, ExclusionDetails1732100000004, ChangeWatch1734500000000];
