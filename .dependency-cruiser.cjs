/**
 * Import rules checked by `npm run check` (dependency-cruiser): no cycles between src/ folders,
 * none between modules either, Redis connections opened only where the process is put together,
 * and nothing in src/ imports tests, benchmarks or scripts.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'Folders of src/ form layers: a folder never depends, through any path, on one that depends on it.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      comment:
        'Modules of a folder form layers too, type-only imports included: a type two modules share gets a module of its own, which neither needs the other to read.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'connections-opened-at-composition-root',
      comment:
        'Redis connections are opened in one place: the factory (src/redis/connections.ts), created by the composition root (main.ts) or the vigil command, and handed to the parts that need connections. Types may be imported anywhere.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(main\\.ts$|cli/|redis/)' },
      to: { path: '^src/redis/(connect|connections)\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'src-stands-alone',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
