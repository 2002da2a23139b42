// Lint: typescript-eslint recommended rules plus import-cycle detection across the whole tree.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

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
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unsafe-function-type': 'off',
      '@typescript-eslint/no-this-alias': 'off',
      // Configuration is read once, in config.ts (readEnv); nothing else reads the environment.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through readEnv()/config.ts only.' }],
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/services/*/src/**', '../../services/**'], message: 'A service never imports another service; use contracts and HTTP/bus.' }] }],
    },
  },
  {
    // tfjs-node is optional (require() inside try/catch when present); jsfive is loaded with require().
    files: ['services/analysis-worker/src/domain/musicnn/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts', '**/bench/**/*.ts', '**/__tests__/**/*.ts', 'shared/testkit/**/*.ts', 'shared/platform/src/config.ts'],
    rules: { 'no-restricted-properties': 'off', '@typescript-eslint/no-require-imports': 'off', '@typescript-eslint/no-explicit-any': 'off', 'no-restricted-imports': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
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
