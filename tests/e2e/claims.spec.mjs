// A 2-D sweep with expectations: the experiment page labels the points and shows the verdicts.
import assert from 'node:assert/strict';
import { ADMIN, api, apiGet, BASE, createExperiment, createScenario, shot, signIn, useBrowser, waitForExperiment } from './fixture.mjs';

const ui = useBrowser();
ui.step('claims: 2-D labels and the expectations table', async () => {
  const { page } = ui;
  const base = await createScenario('claims', { configurations: ['cubic', 'bbr'], duration: 3 });
  const yaml0 = await (await fetch(`${BASE}/api/scenarios/${base.id}/yaml`, { headers: { Authorization: `Bearer ${ADMIN}` } })).text();
  const name = `${base.name}-2d`.slice(0, 40);
  const yaml = yaml0.replace(/^name: .*$/m, `name: ${name}`) + `sweep:
  - {path: hosts.settings.rack, values: [true, false]}
  - {path: traffic.0.start_s, values: [0]}
expectations:
  - id: bbr-near-cubic
    claim: "BBR's goodput is within 100x of CUBIC's"
    source: {paper: product, section: "demo"}
    measure: "ratio(goodput_bps, bbr/cubic)"
    band: [0.01, 100]
    direction: ">"
  - id: cubic-10g
    claim: "CUBIC reaches 10 Gbit/s"
    source: {paper: product}
    measure: "mean(goodput_bps, cubic)"
    at: {hosts.settings.rack: false}
    band: [1.0e10, 2.0e10]
    linux_note: "cannot hold on this link"
`;
  const sc = await api('POST', '/api/scenarios', { json: { yaml } });
  const id = await createExperiment(sc.id);
  ui.track(id);
  const exp = await waitForExperiment(id);
  assert.equal(exp.state, 'succeeded');
  await signIn(page, ADMIN);
  await page.goto(`${BASE}/#/experiments/${id}`);
  await page.getByTestId('expectations-table').waitFor({ timeout: 30_000 });
  await page.getByTestId('verdict-cubic-10g').getByText('fails').waitFor();
  assert.equal(await page.getByTestId('verdict-bbr-near-cubic').innerText(), 'holds');
  await page.locator('circle[data-sweep="rack=false, start_s=0"]').first().waitFor();
  const verdicts = await apiGet(`/api/experiments/${id}/expectations`);
  console.log(JSON.stringify(verdicts.map((v) => [v.id, v.verdict, v.mean, v.note])));
  await shot(page, 'claims-experiment');
});
