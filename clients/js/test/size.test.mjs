// The package as an app ships it: dist/index.js bundled and minified by esbuild, then gzipped.
// Prints the sizes (`npm run size`) and fails past the 11 KB budget (passkeys and OAuth2 took
// it past 10 KB).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

test('minified and gzipped, the whole client is at most 11 KB', async () => {
  const out = await build({ entryPoints: [join(root, 'dist/index.js')], bundle: true, minify: true, format: 'esm', write: false, target: 'es2022' });
  const code = out.outputFiles[0].contents;
  const gzipped = gzipSync(code, { level: 9 }).length;
  console.log(`# bundle: ${code.length} bytes minified, ${gzipped} bytes gzipped`);
  assert.ok(code.length > 5000, 'the bundle holds the client');
  assert.ok(gzipped <= 11264, `${gzipped} bytes gzipped`);
});
