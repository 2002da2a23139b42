import { CreateAuth1732100000000 } from './1732100000000-CreateAuth';
import { SessionsAndRateLimits1732200000000 } from './1732200000000-SessionsAndRateLimits';

/** Migrations of the auth schema, in order (registered explicitly, never globbed). */
export const authMigrations = [CreateAuth1732100000000, SessionsAndRateLimits1732200000000];
