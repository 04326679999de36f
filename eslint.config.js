import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'test/bench/data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Type-aware rules on the library and CLI sources (tests and benches keep the fast syntactic set).
    files: ['src/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Handlers share one async signature whether or not they await (yargs, stream callbacks).
      '@typescript-eslint/require-await': 'off',
      // Caught values (`unknown`, narrowed to `{}` once checked) are re-thrown or rejected as they
      // came; the sandbox's parser bails out with a sentinel.
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
    },
  },
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Functions fit on a screen (issue 11: none over about 80 lines).
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  {
    // src/internal.ts is the CLI's (unpublished) barrel: library code never depends on it, so
    // nothing in the library can reach the CLI or an internal it would then have to publish.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/internal.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/internal.js'], message: 'Only the CLI imports src/internal.ts' }] },
      ],
    },
  },
  {
    // The CLI is a client of the library: it imports it only through the internal barrel.
    files: ['src/cli/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../*', '!../internal.js'], message: 'The CLI imports the library only through ../internal.js' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/commands/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../../*', '!../../internal.js'],
              message: 'The CLI imports the library only through ../../internal.js',
            },
          ],
        },
      ],
    },
  },
);
