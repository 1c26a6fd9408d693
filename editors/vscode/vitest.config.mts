import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The extension's logic runs against a small stand-in for the VS Code API.
    alias: { vscode: fileURLToPath(new URL('./test/vscode-mock.ts', import.meta.url)) },
  },
  test: { include: ['test/**/*.test.ts'], testTimeout: 120_000 },
});
