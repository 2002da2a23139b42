import { CreateIndex1732100000000 } from './1732100000000-CreateIndex';

/** Migrations of the index schema, in order (registered explicitly, never globbed). */
export const indexMigrations = [CreateIndex1732100000000];
