// Lint: typescript-eslint recommended rules, import-cycle detection across the whole tree, and the layers of a unit
// (docs/architecture.md, "Every service has the same inner shape"): routes and bus consumers call domain services,
// domain code reaches the database only through its ports, stores implement them; no unit imports another.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const root = import.meta.dirname;

/** The service packages: a service or the gateway never imports one (infra/standalone and bench compose them). */
const SERVICE_PACKAGES = ['@polyphony/registry', '@polyphony/catalogue-identity', '@polyphony/analysis-worker', '@polyphony/index', '@polyphony/playlist', '@polyphony/gateway'];
const NO_OTHER_UNIT = { group: ['**/services/*/src/**', '../../services/**', '**/gateway/src/**'], message: 'A unit never imports another unit; use contracts and HTTP/bus.' };

/** Which folder of a unit may import which (import-x/no-restricted-paths, resolved file paths). */
const LAYER_ZONES = [
  {
    target: ['services/*/src/http/**', 'services/*/src/bus/**', 'gateway/src/http/**'],
    from: ['services/*/src/store/**', 'gateway/src/store/**'],
    message: 'Routes and bus consumers call domain services, never a store (docs/architecture.md: routes -> domain services -> ports <- stores).',
  },
  {
    target: 'services/*/src/domain/**',
    from: 'services/*/src/store/**',
    message: 'Domain code imports ports (domain/ports.ts), not store classes; the composition root (app.ts) passes the store in.',
  },
  {
    target: ['services/*/src/domain/**', 'services/*/src/store/**'],
    from: 'services/*/src/http/**',
    message: 'Dependencies point one way: http -> domain, never back.',
  },
  // The index is grouped by feature (similarity/, alchemy/, ...): its layers are file roles, not folders.
  {
    target: ['services/index/src/**/*.routes.ts', 'services/index/src/**/*.consumer.ts'],
    from: 'services/index/src/**/*.repository.ts',
    message: 'Routes and bus consumers call domain services, never a repository (docs/architecture.md: routes -> domain services -> ports <- repositories).',
  },
  {
    target: ['services/index/src/**/*.service.ts', 'services/index/src/generation/build-task.ts'],
    from: 'services/index/src/**/*.repository.ts',
    message: 'Index domain services import their feature\'s ports, not repository classes; app.ts passes the repository in.',
  },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', 'coverage/**', '**/*.js', '**/*.mjs', '**/__fixtures__/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Relative imports resolve to .ts sources; @polyphony/* workspace packages to their built dist (npm test builds first).
      'import-x/resolver': { node: { extensions: ['.ts', '.js', '.d.ts'] } },
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      'import-x/no-cycle': ['error', { maxDepth: 10, ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: root, zones: LAYER_ZONES }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unsafe-function-type': 'off',
      '@typescript-eslint/no-this-alias': 'off',
      // Configuration is read once, in config.ts (readEnv); nothing else reads the environment.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through readEnv()/config.ts only.' }],
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/services/*/src/**', '../../services/**'], message: 'A service never imports another service; use contracts and HTTP/bus.' }] }],
      // A file above ~500 lines is a room to split (a warning: it does not fail the lint).
      'max-lines': ['warn', { max: 500 }],
    },
  },
  {
    // Services and the gateway: no other unit, by path or by package name.
    files: ['services/*/src/**/*.ts', 'gateway/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: SERVICE_PACKAGES.map((name) => ({ name, message: NO_OTHER_UNIT.message })), patterns: [NO_OTHER_UNIT] }] },
  },
  {
    // A test file is imported by nothing, so it is never part of a cycle: no-cycle would only walk its imports again.
    files: ['**/*.test.ts'],
    rules: { 'import-x/no-cycle': 'off' },
  },
  {
    // tfjs-node is optional (require() inside try/catch when present); jsfive is loaded with require().
    files: ['services/analysis-worker/src/domain/musicnn/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Gateway layers: HTTP and authentication code never touch SQL; persistence is in gateway/src/store (repositories).
    files: ['gateway/src/http/**/*.ts', 'gateway/src/auth/**/*.ts', 'gateway/src/proxy/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/services/*/src/**', '../../services/**'], message: 'A service never imports another service; use contracts and HTTP/bus.' },
        { group: ['typeorm', 'pg'], message: 'SQL belongs in gateway/src/store (a repository); http/, auth/ and proxy/ call it.' },
      ] }],
    },
  },
  {
    // An http/ folder calls domain code, never a store directly.
    files: ['gateway/src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['typeorm', 'pg'], message: 'SQL belongs in gateway/src/store (a repository).' },
        { group: ['../store/*', '**/store/*'], message: 'Routes call the auth service, never a repository.' },
      ] }],
    },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts', '**/bench/**/*.ts', '**/__tests__/**/*.ts', 'shared/testkit/**/*.ts', 'shared/platform/src/config.ts'],
    rules: { 'no-restricted-properties': 'off', '@typescript-eslint/no-require-imports': 'off', '@typescript-eslint/no-explicit-any': 'off', 'no-restricted-imports': 'off', '@typescript-eslint/no-non-null-assertion': 'off', 'max-lines': 'off', 'import-x/no-restricted-paths': 'off' },
  },
  {
    // The vector engine knows vectors, row numbers, opaque keys and masks: it imports no service and no package
    // that knows songs, servers or the HTTP contract (shared/vector-engine/README.md "What the engine knows").
    files: ['shared/vector-engine/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@polyphony/*', '!@polyphony/vectors', '!@polyphony/platform', '!@polyphony/testkit', '**/services/**'], message: 'The vector engine depends only on @polyphony/vectors and @polyphony/platform (tests: @polyphony/testkit).' }] },
      ],
    },
  },
);
