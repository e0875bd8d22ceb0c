// Tokens admin: an admin creates a token on the tokens page (a name of its own), it works, then
// revokes it and it no longer does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN, apiGet, BASE, shot, signIn, uniqueName, useBrowser } from './fixture.mjs';

const ui = useBrowser();

test('tokens: an admin creates a token, it works, then revokes it', async () => {
  const { page, nav } = ui;
  const name = uniqueName('ci');
  const whoami = async (token) => (await fetch(`${BASE}/api/whoami`, { headers: { Authorization: `Bearer ${token}` } })).status;
  await signIn(page, ADMIN);
  await nav('Tokens').click();
  await page.getByRole('heading', { name: 'API tokens' }).waitFor();
  const form = page.getByRole('region', { name: 'New token' });
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('Role').selectOption('submitter');
  await form.getByLabel(/Expires in/).fill('1');
  await form.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByTestId('new-token').innerText()).trim();
  assert.equal(await whoami(secret), 200);
  const made = (await apiGet('/api/tokens')).find((t) => t.name === name);
  assert.equal(made.role, 'submitter');
  const hours = (Date.parse(made.expires_at) - Date.parse(made.created_at)) / 3.6e6;
  assert.ok(Math.abs(hours - 24) < 0.1, `expires after ${hours} h`);
  const row = page.getByTestId(`token-${made.id}`);
  await row.getByText('active').waitFor();
  await shot(page, '11-tokens');
  await row.getByRole('button', { name: 'Revoke…' }).click();
  await row.getByRole('group', { name: `Revoke ${name}?` }).getByRole('button', { name: 'Revoke', exact: true }).click();
  await row.getByText('revoked').waitFor();
  assert.equal(await whoami(secret), 401);
});
