import { CreateCatalogue1732100000000 } from './1732100000000-CreateCatalogue';

/** Migrations of the catalogue schema, in order (registered explicitly, never globbed). */
export const catalogueMigrations = [CreateCatalogue1732100000000];
