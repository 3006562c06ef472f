import { defineConfig } from 'vitest/config';

// isolated-vm wants --no-node-snapshot, which worker threads refuse: every test runs in forks.
const common = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
};

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        test: {
          ...common,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/reliability/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: 2,
        },
      },
    ],
  },
});
