// Loaded before every test file: reflect-metadata for TypeORM, quiet logs unless asked for.
require('reflect-metadata');
if (!process.env.LOG_LEVEL) process.env.LOG_LEVEL = 'error';
