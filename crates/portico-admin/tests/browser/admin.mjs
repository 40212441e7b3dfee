// Drives the admin page in headless Chromium (Debian's package, never a downloaded browser) through
// the DevTools protocol with playwright-core. Started by tests/integration/browser.rs, which sets
// up the server and its data, reads the JSON this prints last, and checks the store afterwards.
//
// Every step checks what a person would see; the first failure exits 1 with its message.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const PAGE = env('ADMIN_URL');
const SHOTS = env('SCREENSHOT_DIR');
const ADMIN = { user: env('ADMIN_USER'), password: env('ADMIN_PASSWORD'), totp: env('ADMIN_TOTP') };
const PLAIN = { user: env('PLAIN_USER'), password: env('PLAIN_PASSWORD') };
mkdirSync(SHOTS, { recursive: true });

/** A `w` x `h` RGB PNG, written here so the test needs no image files. */
function png(w, h) {
  const crc32 = (bytes) => {
    let crc = 0xffffffff;
    for (const b of bytes) {
      let c = (crc ^ b) & 0xff;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crc = (crc >>> 8) ^ c;
    }
    return (crc ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(w, 0);
  header.writeUInt32BE(h, 4);
  header[8] = 8; // bits per channel
  header[9] = 2; // RGB
  const rows = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * (w * 3 + 1) + 1 + x * 3;
      rows[i] = (x * 255 / w) | 0;
      rows[i + 1] = (y * 255 / h) | 0;
      rows[i + 2] = 120;
    }
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}
const NOTE_TEXT = 'Packing list: tent, stove, map.\n';

const results = {};
const problems = [];
function check(condition, message) {
  if (!condition) throw new Error(message);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
const page = await context.newPage();
page.setDefaultTimeout(10000);

// Every request the page makes: no token may ever travel in a URL.
const requests = [];
page.on('request', (request) => {
  requests.push({ url: request.url(), token: request.headers()['x-auth-token'] || null });
});
// confirm() dialogs are accepted; any alert() means markup from data ran.
const alerts = [];
page.on('dialog', async (dialog) => {
  if (dialog.type() === 'confirm') await dialog.accept();
  else { alerts.push(dialog.message()); await dialog.dismiss(); }
});
page.on('pageerror', (error) => problems.push('page error: ' + error.message));
page.on('console', (message) => {
  if (message.type() === 'error' && !/status of (4\d\d)/.test(message.text())) {
    problems.push('console error: ' + message.text());
  }
});

const shot = async (name) => {
  // The passing notice would cover what the screenshot is of.
  await page.evaluate(() => document.getElementById('notice')?.classList.remove('shown'));
  await page.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
};
const text = async (selector) => (await page.locator(selector).textContent()) || '';
const waitText = async (selector, pattern) => {
  await page.locator(selector).filter({ hasText: pattern }).waitFor();
  return text(selector);
};

async function logInWith(who) {
  await page.fill('#login-form [name=user]', who.user);
  await page.fill('#login-form [name=password]', who.password);
  await page.click('#login-form button[type=submit]');
}

async function openCollection(name) {
  await page.click(`#collection-list a[href="#/collections/${name}"]`);
  await page.locator('#collection-detail h2', { hasText: name }).waitFor();
  await page.locator('#page-info').waitFor();
}

async function filter(where) {
  await page.fill('#filter', where);
  await page.press('#filter', 'Enter');
}

try {
  // ----- a non-admin is refused -----
  await page.goto(PAGE);
  await page.locator('#login-form').waitFor();
  await shot('01-login');
  await logInWith(PLAIN);
  results.nonAdminMessage = await waitText('#login-error', /role/);
  check(await page.locator('#top').isHidden(), 'a non-admin got past the login');
  check(await page.evaluate(() => sessionStorage.length) === 0, 'a non-admin token was kept');
  await shot('02-login-refused');

  // ----- log in with the keyboard; the admin has two-factor codes on -----
  await page.fill('#login-form [name=user]', '');
  await page.focus('#login-form [name=user]');
  await page.keyboard.type(ADMIN.user);
  await page.keyboard.press('Tab');
  await page.keyboard.type(ADMIN.password);
  await page.keyboard.press('Enter');
  results.totpMessage = await waitText('#login-error', /two-factor/);
  check(await page.locator('#top').isHidden(), 'in without the two-factor code');
  await page.focus('#login-form [name=totp]');
  await page.keyboard.type(ADMIN.totp);
  await page.keyboard.press('Enter');
  await page.locator('#top').waitFor();
  await page.locator('#collection-list a').first().waitFor();
  results.whoami = await text('#whoami');
  results.cookies = (await context.cookies()).length;
  results.tokenStored = await page.evaluate(() => (sessionStorage.getItem('portico-admin-token') || '').length);

  // ----- collections with their counts -----
  results.collections = await page.locator('#collection-list a').allTextContents();
  await openCollection('articles');
  results.firstPage = await text('#page-info');
  results.indexes = await text('#indexes');
  results.firstPageRows = await page.locator('#documents tbody tr').count();
  await shot('03-collections');
  await page.getByRole('button', { name: /Next/ }).click();
  results.secondPage = await waitText('#page-info', /^21/);

  // Sort by title, descending on the second click.
  await page.locator('#documents th button', { hasText: 'title' }).click();
  await waitText('#page-info', /^1–/);
  await page.locator('#documents th[aria-sort=ascending]').waitFor();
  await page.locator('#documents th button', { hasText: 'title' }).click();
  await page.locator('#documents th[aria-sort=descending]').waitFor();
  results.sortedFirstId = (await page.locator('#documents tbody tr td:first-child').first().textContent()).trim();

  // ----- filter, and a bad filter's error inline -----
  await filter('{"tag": "red"}');
  results.filtered = await waitText('#page-info', /of 13$/);
  await shot('04-filtered');
  await filter('{"n": {"$bogus": 1}}');
  results.badFilter = await waitText('#filter-error', /Invalid where/);
  results.badFilterInvalid = await page.getAttribute('#filter', 'aria-invalid');
  await shot('05-bad-filter');
  await filter('{not json');
  results.notJsonFilter = await waitText('#filter-error', /not JSON/);

  // ----- a field holding markup is shown as text -----
  await filter('{"_id": "xss"}');
  await waitText('#page-info', /of 1$/);
  results.xssCell = await page.locator('#documents tbody td', { hasText: 'onerror' }).first().textContent();
  await page.locator('#documents tbody button.link', { hasText: 'xss' }).click();
  results.xssJson = await text('#document-json');
  results.imagesOnPage = await page.locator('main img').count();
  await shot('06-xss-as-text');

  // ----- open a document, edit it -----
  await filter('{"_id": "a02"}');
  await waitText('#page-info', /of 1$/);
  // With the keyboard: focus the id, Enter opens the document.
  await page.locator('#documents tbody button.link', { hasText: 'a02' }).focus();
  await page.keyboard.press('Enter');
  await page.locator('#document-json').waitFor();
  results.openedJson = JSON.parse(await text('#document-json'));
  await page.click('#edit-document');
  const edited = { ...results.openedJson, title: 'Edited in the browser', extra: [1, 2] };
  await page.fill('#document-editor', JSON.stringify(edited, null, 2));
  await shot('07-edit-document');
  await page.click('#save-document');
  results.savedJson = JSON.parse(await waitText('#document-json', /Edited in the browser/));

  // ----- a duplicate _id is an error on the page -----
  await page.click('#new-document');
  await page.fill('#document-editor', '{"_id": "a03", "title": "copy"}');
  await page.click('#save-document');
  results.duplicate = await waitText('#editor-error', /./);
  await page.fill('#document-editor', '{"_id": "fresh", "title": "Made in the browser", "tag": "green"}');
  await page.click('#save-document');
  results.created = JSON.parse(await waitText('#document-json', /Made in the browser/));

  // ----- delete a document (the confirm is accepted) -----
  await filter('{"_id": "a04"}');
  await waitText('#page-info', /of 1$/);
  await page.locator('#documents tbody button.link', { hasText: 'a04' }).click();
  await page.click('#delete-document');
  results.afterDelete = await waitText('#page-info', /of 0$/);

  // ----- the JSON Schema is checked on edit -----
  await openCollection('notes');
  await page.locator('#documents tbody button.link').first().click();
  await page.click('#edit-document');
  await page.fill('#document-editor', '{"text": 42}');
  await page.click('#save-document');
  results.schemaError = await waitText('#editor-error', /Validation/);
  await shot('08-schema-error');

  // ----- files: upload an image and a text file, previews, download, a refused type, delete -----
  await openCollection('albums');
  await page.locator('#documents tbody button.link', { hasText: 'trip' }).click();
  await page.locator('#document-files').waitFor();
  results.filesBefore = await page.locator('#document-files li.file').count();
  const uploadTo = async (field, file) => {
    await page.setInputFiles('#upload-' + field, file);
    await page.locator('form.upload', { has: page.locator('#upload-' + field) })
      .getByRole('button', { name: 'Upload' }).click();
  };
  await uploadTo('photo', { name: 'sunset.png', mimeType: 'image/png', buffer: png(640, 480) });
  await page.locator('#document-files ul[data-field="photo"] li.file', { hasText: 'sunset.png' }).waitFor();
  await uploadTo('docs', { name: 'packing.txt', mimeType: 'text/plain', buffer: Buffer.from(NOTE_TEXT) });
  await page.locator('#document-files ul[data-field="docs"] li.file', { hasText: 'packing.txt' }).waitFor();
  // The photo's preview: a thumbnail the server made (fitted in 160x160), shown from a blob.
  await page.waitForFunction(() => {
    const img = document.querySelector('#document-files ul[data-field="photo"] img.thumb');
    return img && img.complete && img.naturalWidth > 0;
  });
  const thumb = page.locator('#document-files ul[data-field="photo"] img.thumb');
  results.thumbSize = await thumb.evaluate((img) => [img.naturalWidth, img.naturalHeight]);
  results.thumbScheme = ((await thumb.getAttribute('src')) || '').split(':')[0];
  results.docsImages = await page.locator('#document-files ul[data-field="docs"] img').count();
  results.docsLink = (await page.locator('#document-files ul[data-field="docs"] button.download').textContent()).trim();
  results.uploadedJson = JSON.parse(await text('#document-json'));
  await shot('08b-files');
  // The text file's link downloads its bytes.
  const [fileDownload] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#document-files ul[data-field="docs"] button.download').click(),
  ]);
  results.fileDownloadName = fileDownload.suggestedFilename();
  const savedFile = join(SHOTS, 'downloaded-packing.txt');
  await fileDownload.saveAs(savedFile);
  results.fileDownloadText = readFileSync(savedFile, 'utf8');
  // Bytes that are not an image are refused for the photo, whatever the browser declares.
  await uploadTo('photo', { name: 'fake.png', mimeType: 'image/png', buffer: Buffer.from('not an image at all') });
  results.wrongType = await waitText('#files-error', /not accepted/);
  // Delete the photo (the confirm is accepted): its metadata, bytes and thumbnail go.
  await page.locator('#document-files ul[data-field="photo"] button.delete-file').click();
  await page.locator('#document-files ul[data-field="photo"] li', { hasText: 'No files.' }).waitFor();
  results.afterFileDelete = JSON.parse(await text('#document-json'));
  results.imagesAfterDelete = await page.locator('#document-files img').count();

  // ----- users: add one with a role, set roles, search, log out, remove -----
  // The views are links: reachable and followed with the keyboard.
  await page.focus('nav a[data-view=users]');
  await page.keyboard.press('Enter');
  await page.locator('#users tbody tr').first().waitFor();
  results.usersBefore = await page.locator('#users tbody tr').count();
  results.usersPageText = await text('main');
  await page.fill('#add-user [name=username]', 'carol');
  await page.fill('#add-user [name=email]', 'carol@example.com');
  await page.fill('#add-user [name=password]', 'carol-password-1');
  await page.fill('#add-user [name=roles]', 'editor');
  await page.click('#add-user button[type=submit]');
  await page.locator('#user-panel h3', { hasText: 'carol' }).waitFor();
  await page.fill('#user-roles', 'editor, reviewer');
  await page.click('#save-roles');
  await page.locator('#users tbody tr', { hasText: 'reviewer' }).waitFor();
  results.carolRow = await page.locator('#users tbody tr', { hasText: 'carol' }).textContent();
  await shot('09-users');
  await page.fill('#user-search', 'CAROL@');
  await page.press('#user-search', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('#users tbody tr').length === 1);
  results.searchRows = await page.locator('#users tbody tr').count();
  await page.fill('#user-search', '');
  await page.press('#user-search', 'Enter');
  await page.locator('#users tbody button.link', { hasText: PLAIN.user }).click();
  await page.getByRole('button', { name: 'Log out everywhere' }).click();
  results.loggedOutNotice = await waitText('#notice', /logged out everywhere/);
  await page.locator('#users tbody button.link', { hasText: 'dave' }).click();
  await page.getByRole('button', { name: 'Remove user' }).click();
  await page.waitForFunction(() => ![...document.querySelectorAll('#users tbody tr')].some((r) => r.textContent.includes('dave')));
  results.usersAfter = await page.locator('#users tbody tr').count();
  // Whether each address is verified; a reset mail for bob.
  results.rootRow = await page.locator('#users tbody tr', { hasText: ADMIN.user + '@' }).textContent();
  results.bobRow = await page.locator('#users tbody tr', { hasText: PLAIN.user + '@' }).textContent();
  await page.locator('#users tbody button.link', { hasText: PLAIN.user }).click();
  await page.click('#send-reset');
  results.resetNotice = await waitText('#notice', /reset mail/);
  await shot('09b-reset-mail');

  // ----- API: every route, and the OpenAPI link -----
  await page.click('nav a[data-view=api]');
  await page.locator('#routes tbody tr').first().waitFor();
  results.routeRows = await page.locator('#routes tbody tr').allTextContents();
  results.openapiHref = await page.getAttribute('#openapi-link', 'href');
  await shot('10-api');

  // ----- Backups: none yet, take one, download it -----
  await page.click('nav a[data-view=backups]');
  await page.locator('#backups tbody tr').first().waitFor();
  results.backupRowsBefore = await page.locator('#backups tbody tr').allTextContents();
  await page.click('#take-backup');
  results.backupNotice = await waitText('#notice', /Backup portico-backup-.* taken/);
  await page.locator('#backups tbody tr button.link').first().waitFor();
  results.backupRowsAfter = await page.locator('#backups tbody tr').allTextContents();
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#backups tbody tr button.link', { hasText: 'Download' }).first().click(),
  ]);
  results.downloadName = download.suggestedFilename();
  const saved = join(SHOTS, 'downloaded-backup.db');
  await download.saveAs(saved);
  results.downloadPath = saved;
  await shot('10b-backups');

  // ----- Jobs: pending and failed, one retried -----
  await page.click('nav a[data-view=jobs]');
  await page.locator('#jobs table').nth(2).locator('tbody tr').first().waitFor();
  results.jobsPending = await page.locator('#jobs table').nth(1).locator('tbody tr').allTextContents();
  results.jobsFailed = await page.locator('#jobs table').nth(2).locator('tbody tr').allTextContents();
  await shot('10c-jobs');
  await page.locator('#jobs table').nth(2).locator('button', { hasText: 'Retry' }).first().click();
  results.jobsNotice = await waitText('#notice', /queued again/);

  // ----- API keys: one added (shown once), listed, revoked -----
  await page.click('nav a[data-view=keys]');
  await page.locator('#keys tbody tr').first().waitFor();
  results.keyRowsBefore = await page.locator('#keys tbody tr').allTextContents();
  await page.fill('#key-name', 'deploy-bot');
  await page.fill('#key-roles', 'editor, reports');
  await page.fill('#key-days', '30');
  await page.click('#key-form button[type=submit]');
  results.keyNotice = await waitText('#notice', /Key added/);
  results.newKey = await page.locator('#new-key-value').textContent();
  await page.locator('#keys tbody tr', { hasText: 'deploy-bot' }).waitFor();
  results.keyRowsAfter = await page.locator('#keys tbody tr').allTextContents();
  await shot('10d-keys');
  await page.locator('#keys tbody tr', { hasText: 'deploy-bot' }).locator('button', { hasText: 'Revoke' }).click();
  results.keyRevoked = await waitText('#notice', /Key revoked/);
  await page.locator('#keys tbody tr', { hasText: 'No keys yet.' }).waitFor();
  results.keyRowsRevoked = await page.locator('#keys tbody tr').allTextContents();

  // ----- 375 px wide, and dark mode -----
  await page.setViewportSize({ width: 375, height: 800 });
  await page.click('nav a[data-view=collections]');
  await openCollection('articles');
  results.narrowOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot('11-narrow-collections');
  await page.click('nav a[data-view=users]');
  await page.locator('#users tbody tr').first().waitFor();
  results.narrowUsersOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot('12-narrow-users');
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.click('nav a[data-view=collections]');
  await openCollection('articles');
  results.darkBackground = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await shot('13-dark-collections');
  await page.emulateMedia({ colorScheme: 'light' });
  results.lightBackground = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);

  // ----- log out: the token is gone from the page and from the server -----
  const oldToken = await page.evaluate(() => sessionStorage.getItem('portico-admin-token'));
  await page.click('#logout');
  await page.locator('#login-form').waitFor();
  results.afterLogout = await page.evaluate(() => sessionStorage.length);
  results.oldTokenStatus = await page.evaluate(async (t) =>
    (await fetch('api/me', { headers: { 'X-Auth-Token': t } })).status, oldToken);

  results.tokenInUrl = requests.filter((r) => oldToken && r.url.includes(oldToken)).length;
  results.apiCallsWithoutToken = requests
    .filter((r) => r.url.includes('/api/') && !r.url.endsWith('/api/login') && !r.token).length;
  results.requests = requests.length;
  results.alerts = alerts;
  results.problems = problems;
  console.log(JSON.stringify(results));
} catch (error) {
  try { await shot('failure'); } catch (e) { /* the screenshot is a help, not the point */ }
  console.error('browser test failed: ' + (error && error.stack || error));
  console.error('seen so far: ' + JSON.stringify(results));
  console.error('page problems: ' + JSON.stringify(problems));
  process.exitCode = 1;
} finally {
  await browser.close();
}
