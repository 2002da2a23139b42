import { CreateRegistry1732100000000 } from './1732100000000-CreateRegistry';

/** Migrations of the registry schema, in order. */
export const registryMigrations = [CreateRegistry1732100000000];
