import { CreateIndex1732100000000 } from './1732100000000-CreateIndex';
import { CreateIndexTables1732100000001 } from './1732100000001-CreateIndexTables';

/** Migrations of the index schema, in order (registered explicitly, never globbed). */
export const indexMigrations = [CreateIndex1732100000000, CreateIndexTables1732100000001];
