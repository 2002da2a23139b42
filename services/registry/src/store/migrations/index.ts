import { CreateRegistry1732100000000 } from './1732100000000-CreateRegistry';
import { CreateOperations1732700000000 } from './1732700000000-CreateOperations';

/** Migrations of the registry schema, in order. */
export const registryMigrations = [CreateRegistry1732100000000, CreateOperations1732700000000];
