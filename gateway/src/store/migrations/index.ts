import { CreateAuth1732100000000 } from './1732100000000-CreateAuth';

/** Migrations of the auth schema, in order (registered explicitly, never globbed). */
export const authMigrations = [CreateAuth1732100000000];
