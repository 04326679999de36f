import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/**
 * The layers of src/, top to bottom (docs/design.md#layers). A module imports only from its own
 * folder and from the layers below its own, never one of its layer or above: so no import runs up
 * a layer, and there is no cycle between folders (test/import-cycles.test.ts checks the resolved
 * graph against the same table, and cycles inside a folder). Each name is a folder of src/, or a
 * top-level file without `.ts`.
 */
export const LAYERS = [
  ['cli'],
  ['index'],
  ['sandbox', 'upload'],
  ['state'],
  ['hashing'],
  ['ingest'],
  ['api', 'identifiers'],
  ['platform'],
  ['util', 'errors', 'version'],
];

/**
 * The sandbox is the independent judge of the platform: it imports none of the client's rules,
 * only the error classes and what util/ shares (its own listening address rule, isLoopbackHost).
 */
export const SANDBOX_IMPORTS = ['errors', 'util'];

const layerOf = (unit) => LAYERS.findIndex((layer) => layer.includes(unit));
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A relative specifier reaching src/<unit> from any depth below src/ (`../x/…`, `../../x.js`). */
const reaching = (unit, prefix) => `^${prefix}${escape(unit)}(/|\\.js$)`;

/** The units a module of `unit` may not import, each with the rule it breaks. */
export function forbidden(unit) {
  const mine = layerOf(unit);
  return LAYERS.flat()
    .filter((other) => other !== unit)
    .map((other) => {
      const theirs = layerOf(other);
      if (unit === 'sandbox' && !SANDBOX_IMPORTS.includes(other))
        return [other, `layers: the sandbox imports none of the client's rules (only ${SANDBOX_IMPORTS.join(', ')})`];
      if (other === 'sandbox' && unit !== 'cli')
        return [other, 'layers: only the CLI imports the sandbox (the library never runs it)'];
      if (theirs < mine)
        return [other, `layers: ${unit} (layer ${mine}) imports nothing of ${other}, a layer above it`];
      if (theirs === mine)
        return [other, `layers: ${unit} and ${other} share layer ${mine}: neither imports the other`];
      return undefined;
    })
    .filter((entry) => entry !== undefined);
}

/** One no-restricted-imports config per unit (flat config replaces a rule's options, never merges them). */
function layerConfig(unit) {
  const nested = !['index', 'errors', 'version'].includes(unit);
  const prefix = nested ? '(\\.\\./)+' : '\\./';
  const patterns = forbidden(unit).map(([other, message]) => ({ regex: reaching(other, prefix), message }));
  return {
    files: [nested ? `src/${unit}/**/*.ts` : `src/${unit}.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns }] },
  };
}

/**
 * No barrel: a module exports what it defines, and every import names the module that defines the
 * name, so the trail from a CLI flag to the request is imports and calls alone (docs/design.md).
 * Only the package's two entries (src/index.ts, src/sandbox/index.ts) pass names on, by name.
 */
const EXPORT_ALL = {
  selector: 'ExportAllDeclaration',
  message: 'no barrel: export each name by name (export { a, b } from …), or import it from its module',
};
export const NO_EXPORT_ALL = {
  files: ['src/**/*.ts'],
  rules: {
    'no-restricted-syntax': [
      'error',
      EXPORT_ALL,
      {
        selector: 'ExportNamedDeclaration[source]',
        message:
          'no re-export: importers take the name from the module that defines it (only src/index.ts and src/sandbox/index.ts pass names on)',
      },
    ],
  },
};
const ENTRIES_PASS_NAMES_ON = {
  files: ['src/index.ts', 'src/sandbox/index.ts'],
  rules: { 'no-restricted-syntax': ['error', EXPORT_ALL] },
};

export const LAYER_CONFIGS = [
  NO_EXPORT_ALL,
  ENTRIES_PASS_NAMES_ON,
  ...LAYERS.flat()
    .filter((unit) => unit !== 'cli')
    .map(layerConfig),
  {
    // The CLI sits on top: it imports the modules that define what it uses (no barrel), the
    // sandbox only through its entry, and its shared modules import no command (main.ts registers them).
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+sandbox/(?!index\\.js$)',
              message: 'layers: the CLI reaches the sandbox through its entry, sandbox/index.js',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/*.ts'],
    ignores: ['src/cli/main.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+sandbox/(?!index\\.js$)',
              message: 'layers: the CLI reaches the sandbox through its entry, sandbox/index.js',
            },
            {
              regex: '^\\./commands/',
              message: 'layers: only main.ts imports a command (commands sit above what they share)',
            },
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
              regex: '^(\\.\\./)+sandbox/(?!index\\.js$)',
              message: 'layers: the CLI reaches the sandbox through its entry, sandbox/index.js',
            },
            { regex: '^\\./', message: 'layers: a command imports no other command (what two share goes to src/cli/)' },
          ],
        },
      ],
    },
  },
];

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
    // `import { type A } from 'm'` still loads m at run time (verbatimModuleSyntax keeps `import {} from 'm'`):
    // an import of types only is written `import type`, so a command (or a test) loads only the modules it runs.
    files: ['**/*.ts'],
    rules: { '@typescript-eslint/no-import-type-side-effects': 'error' },
  },
  {
    // Functions fit on a screen (issue 11: none over about 80 lines).
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  ...LAYER_CONFIGS,
);
