import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The image smoke test (docs/adr/0035-image-built-in-ci.md): not part of `npm test`, because it
// needs the image built by .ci/image/build.sh (podman, as root). `npm run test:image` runs it;
// .ci/run runs it after the build. The test cluster is the one the other suites use.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    name: 'image',
    include: ['test/image/**/*.test.ts'],
    globalSetup: ['test/setup/apiserver-global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 600_000,
    fileParallelism: false,
  },
});
