/**
 * One jest run over the whole tree, split into tiers by file suffix:
 *   *.test.ts      unit (fakes only)
 *   *.int.test.ts  integration (real PostgreSQL, RabbitMQ, ffmpeg, supysonic)
 *   *.api.test.ts  HTTP API through supertest with real signed cookies and bearer tokens
 * Workspace packages resolve to their TypeScript sources, so tests do not need a prior build.
 */
const moduleNameMapper = {
  '^@polyphony/(contracts|platform|vectors|vector-engine|landmarks|media-servers|testkit|llm)$': '<rootDir>/shared/$1/src',
  '^@polyphony/gateway$': '<rootDir>/gateway/src',
  '^@polyphony/(registry|catalogue-identity|analysis-worker|index|playlist)$': '<rootDir>/services/$1/src',
  // Package `exports` subpaths (a service's documented library API for tools outside it).
  '^@polyphony/analysis-worker/engine$': '<rootDir>/services/analysis-worker/src/engine',
  '^@polyphony/catalogue-identity/identity$': '<rootDir>/services/catalogue-identity/src/identity-engine',
};
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json' }] };
const common = {
  rootDir: __dirname,
  moduleNameMapper,
  transform,
  testEnvironment: 'node',
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  setupFiles: ['<rootDir>/shared/testkit/jest.setup.js'],
};
module.exports = {
  testTimeout: 60000,
  // Longest suites first (known durations when jest has no cache of its own, as on CI): see the file.
  testSequencer: '<rootDir>/shared/testkit/jest.sequencer.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['**/*.test.ts'], testPathIgnorePatterns: [...common.testPathIgnorePatterns, '\\.int\\.test\\.ts$', '\\.api\\.test\\.ts$'] },
    { ...common, displayName: 'api', testMatch: ['**/*.api.test.ts'] },
    { ...common, displayName: 'integration', testMatch: ['**/*.int.test.ts'] },
  ],
};
