// `portico types --client` against the client: the declarations written for the small app of
// the README (the repository's examples/app/portico.toml, with JSON Schemas for its collections) compile with
// test/types/generated/usage.ts under `tsc --strict`, whose @ts-expect-error lines hold only
// while a misspelt field, a missing required field or a wrong type is an error.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BIN } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const generated = join(here, 'types/generated');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

function compile() {
  return spawnSync(process.execPath, [tsc, '-p', join(generated, 'tsconfig.json')], { cwd: root, encoding: 'utf8' });
}

test('the types portico writes for an app type its documents under tsc --strict', () => {
  const out = spawnSync(BIN, ['types', '--client', '--config', resolve(root, '../../examples/app/portico.toml')], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /declare module 'portico-client'/);
  const file = join(generated, 'portico-app.d.ts');
  writeFileSync(file, out.stdout);
  try {
    const typed = compile();
    assert.equal(typed.status, 0, typed.stdout + typed.stderr);

    // Without the schemas' types (every document open), the expected errors go missing and
    // the same file no longer compiles: the test can fail.
    writeFileSync(file, out.stdout.replace(/export interface Tasks \{[\s\S]*?\n\}\n/, 'export interface Tasks { _id: string; [key: string]: any }\n'));
    const loose = compile();
    assert.notEqual(loose.status, 0, 'usage.ts compiled against open task documents');
    assert.match(loose.stdout, /Unused '@ts-expect-error' directive/);
  } finally {
    rmSync(file, { force: true });
  }
});
