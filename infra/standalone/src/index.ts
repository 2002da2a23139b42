export { startStack, type Stack, type StackOptions } from './stack';
export { startEmbeddedPostgres } from './embedded-db';
