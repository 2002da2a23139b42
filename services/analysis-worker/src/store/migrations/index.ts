import { CreateAnalysis1732100000000 } from './1732100000000-CreateAnalysis';

/** Migrations of the analysis schema, in order (registered explicitly, never globbed). */
export const analysisMigrations = [CreateAnalysis1732100000000];
