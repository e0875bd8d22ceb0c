// Sign-in and roles: a wrong token is refused, the admin token opens the start page (as on an
// empty database), and a viewer sees everything but can neither submit nor edit nor see the
// tokens page. The viewer looks at a scenario and a finished experiment of this spec's own,
// made through the API.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ADMIN, BASE, createExperiment, createScenario, emptyLists, shot, signIn, useBrowser, VIEWER, waitForExperiment,
} from './fixture.mjs';

const ui = useBrowser();

test('sign in: a wrong token is refused, the admin token opens the start page', async () => {
  const { page } = ui;
  // the specs share the database: the empty start page is shown with the lists emptied
  const stop = await emptyLists(page, ['/api/experiments']);
  await page.goto(`${BASE}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await shot(page, '01-sign-in');
  await page.getByLabel('API token').fill('sl_not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('This token is unknown, revoked or expired.').waitFor();
  await signIn(page, ADMIN);
  await page.getByRole('heading', { name: 'Start here' }).waitFor();
  await page.getByText('No experiment yet.').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('satlab.token')), ADMIN);
  await shot(page, '02-start-empty');
  await stop();
});

test('a viewer sees everything and cannot submit or edit', async () => {
  const { page, nav } = ui;
  const sc = await createScenario('viewer', { configurations: ['cubic'], duration: 3 });
  const experimentId = await createExperiment(sc.id);
  ui.track(experimentId);
  const exp = await waitForExperiment(experimentId);
  assert.equal(exp.state, 'succeeded', `runs: ${JSON.stringify(exp.runs.map((r) => [r.state, r.error]))}`);

  await signIn(page, ADMIN);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, VIEWER);
  await nav('Scenarios').click();
  await page.getByRole('link', { name: sc.name }).waitFor();
  assert.equal(await page.getByRole('link', { name: /New from the quickstart template/ }).count(), 0);
  await page.getByRole('link', { name: sc.name }).click();
  await page.getByText('You are signed in as a viewer').waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Run an experiment' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: /Create scenario|Save as new revision/ }).count(), 0);
  assert.ok(await page.getByLabel('Name', { exact: true }).first().isDisabled());
  await shot(page, '10-viewer-scenario');
  await page.goto(`${BASE}/#/experiments/${experimentId}`);
  await page.getByRole('heading', { name: 'Comparison' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Cancel|Retry/ }).count(), 0);
  assert.equal(await nav('Tokens').count(), 0);
  const status = await page.evaluate(async ([token, id]) => {
    const r = await fetch('/api/experiments', {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ scenario_id: id }),
    });
    return r.status;
  }, [VIEWER, sc.id]);
  assert.equal(status, 403);
});
