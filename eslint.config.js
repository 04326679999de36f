import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'test/bench/data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // The CLI is a client of the library: it may import only what the package root exports.
    files: ['src/cli/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!../index.js'], message: 'The CLI imports the library only through ../index.js' }] }] },
  },
  {
    files: ['src/cli/commands/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../../*', '!../../index.js'], message: 'The CLI imports the library only through ../../index.js' }] }] },
  },
);
