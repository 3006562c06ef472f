// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // User parsers in test/fixtures/parsers are deliberately broken or hostile (one does not even parse).
  { ignores: ['node_modules/', 'var/', 'bench/results/', 'coverage/', '.tools/', 'test/fixtures/parsers/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', module: 'writable' },
      parserOptions: { projectService: false, project: null },
    },
  },
  {
    // The web console's scripts run in the browser.
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      globals: {
        window: 'readonly',
        document: 'readonly',
        getComputedStyle: 'readonly',
        requestAnimationFrame: 'readonly',
        cancelAnimationFrame: 'readonly',
        setInterval: 'readonly',
        CustomEvent: 'readonly',
        EventSource: 'readonly',
        CSS: 'readonly',
      },
    },
  },
  {
    // User parser files define parsePayload (device codecs decodeUplink) for the sandbox, which
    // calls it by name.
    files: ['config/provisioning/**/*.js', 'test/fixtures/codecs/**/*.js'],
    rules: { '@typescript-eslint/no-unused-vars': 'off', 'no-unused-vars': 'off' },
  },
  {
    // V8 builds an object literal with a getter or setter in dictionary mode, and what the accessor
    // closes over survives young-generation collections: one such literal per request copied every
    // request's objects into the old generation (BENCHMARKS.md, read API). Classes are not affected.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message:
            'No getters or setters in object literals: V8 keeps what they close over past young-generation collections. Use a plain property, a function, or a class.',
        },
      ],
    },
  },
  {
    // The worker's processing is read as short stories of named steps: a long function there hides
    // which step owns which state.
    files: ['src/worker/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
