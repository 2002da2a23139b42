export { startStack, type Stack, type StackOptions } from './stack';
export { startEmbeddedPostgres, freePort } from './embedded-db';
