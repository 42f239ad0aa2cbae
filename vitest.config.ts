import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["./test/global-setup.ts"],
    setupFiles: ["./test/file-setup.ts"],
    // Each test file starts its own anvil, so files may run in parallel; tests inside a file do not.
    pool: "forks",
    // A worker runs file after file in one process, so viem, @x402 and src/ load once per worker
    // instead of once per file (about 1 s of CPU a file). Files still get their own state
    // directory (file-setup.ts) and start their own chains; none mocks a module.
    isolate: false,
    // Two at a time even on two cores: most files wait on blocks and child processes, so a second
    // one fills that time (vitest's default, cores - 1, would run them one by one).
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/summary-reporter.ts"],
  },
});
