import { CreateRegistry1732100000000 } from './1732100000000-CreateRegistry';
import { CreateOperations1732700000000 } from './1732700000000-CreateOperations';
import { ConfigSource1732700000001 } from './1732700000001-ConfigSource';
import { TaskCancelRequested1732800000000 } from './1732800000000-TaskCancelRequested';
import { UserAccounts1734340000000 } from './1734340000000-UserAccounts';
import { ChangeDetection1734500000000 } from './1734500000000-ChangeDetection';
import { AccountLibraryScope1734600000000 } from './1734600000000-AccountLibraryScope';

/** Migrations of the registry schema, in order. */
export const registryMigrations = [CreateRegistry1732100000000, CreateOperations1732700000000, ConfigSource1732700000001, TaskCancelRequested1732800000000, UserAccounts1734340000000, ChangeDetection1734500000000, AccountLibraryScope1734600000000];
