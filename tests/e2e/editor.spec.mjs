// The scenario editor, as one journey on a scenario this spec creates with the form: the library
// (as on an empty database), the quickstart template filled in with the form (a bound error as you
// type, the API's 422 under its field), the YAML view keeping comments, the trace plot and what it
// implies, the template trace uploaded; then a scheme from the catalogue (revision 2), the link
// settings beyond the main fields (a bound error, fixed) and a scheme that needs host settings
// (revision 3), read back from the API and the YAML.
import assert from 'node:assert/strict';
import { ADMIN, apiGet, emptyLists, idFromUrl, shot, signIn, uniqueName, useBrowser } from './fixture.mjs';

const ui = useBrowser();
const NAME = uniqueName('editor');
let scenarioId;

ui.step('library and editor: create a scenario from the quickstart template with the form', async () => {
  const { page, nav } = ui;
  await signIn(page, ADMIN);
  // the specs share the database: the empty library is shown with the list emptied
  const stop = await emptyLists(page, ['/api/scenarios']);
  await nav('Scenarios').click();
  await page.getByRole('heading', { name: 'Scenario library' }).waitFor();
  await page.getByText('No scenario yet.').waitFor();
  await stop();
  await page.getByRole('link', { name: 'New from the quickstart template' }).click();
  await page.getByRole('heading', { name: 'New scenario' }).waitFor();

  const name = page.getByLabel('Name', { exact: true }).first();
  await name.fill(NAME);
  // a bound from the JSON Schema, checked as you type
  const duration = page.getByLabel('Duration (s)').first();
  await duration.fill('0');
  await page.getByText('must be > 0').first().waitFor();
  await duration.fill('6');
  const traffic = page.getByRole('group', { name: '1. bulk_tcp' });
  await traffic.getByLabel('Duration (s)').fill('6');
  // a fast ACM refresh makes the 150-tick quickstart fade last 3 s instead of 15
  await page.getByLabel('ACM refresh period (ms)').fill('20');
  await page.getByRole('group', { name: '3. bbr' }).getByRole('button', { name: 'Remove item 3' }).click();
  // the API's own rule (exactly one of bytes or duration_s) comes back as a 422, shown inline
  await traffic.getByLabel('Bytes', { exact: true }).fill('1000000');
  await page.getByRole('button', { name: 'Create scenario' }).click();
  await traffic.getByText('give exactly one of bytes or duration_s').waitFor();
  await shot(page, '03-editor-inline-error');
  await traffic.getByLabel('Bytes', { exact: true }).fill('');

  // the YAML view is the same document: comments and spelling of untouched lines survive
  await page.getByRole('tab', { name: 'YAML' }).click();
  const yaml = await page.getByLabel('Scenario YAML').inputValue();
  assert.match(yaml, new RegExp(`^name: ${NAME}$`, 'm'));
  assert.match(yaml, /^duration_s: 6$/m);
  assert.match(yaml, /acm: \{refresh_ms: 20, margin_db: 0\.5\}/);
  assert.match(yaml, /symbol_rate_baud: 5\.0e6 {8}# 5 Msym\/s: about 21 Mbit\/s useful at 32APSK 9\/10/);
  assert.doesNotMatch(yaml, /bbr/);
  await page.getByRole('tab', { name: 'Form' }).click();

  // the trace and what it implies on this link (9 dB peak: 8PSK 5/6 with a 0.5 dB margin)
  await page.getByText('Deepest point: 9.0 dB').waitFor();
  await page.getByText('MODCOD 15 (8PSK 5/6)').waitFor();
  await page.getByRole('button', { name: 'Create scenario' }).click();
  await page.getByRole('heading', { name: `Scenario ${NAME}` }).waitFor();
  scenarioId = idFromUrl(page);
  assert.ok(scenarioId > 0);
  const files = await apiGet('/api/files?name=traces/quickstart-fade.txt');
  assert.ok(files.items.some((f) => f.name === 'traces/quickstart-fade.txt'), 'the template trace was uploaded');
  await page.getByText('Showing traces/quickstart-fade.txt (uploaded').waitFor();
  await shot(page, '04-editor-created');
});

ui.step('scheme picker: a configuration from the catalogue joins the scenario', async () => {
  const { page } = ui;
  const picker = page.getByRole('region', { name: 'Add a transport scheme' });
  await picker.getByLabel('Scheme').selectOption({ label: 'TCP BBR (kernel)' });
  await picker.getByTestId('scheme-description').getByText(/bottleneck rate/).waitFor();
  await picker.getByRole('button', { name: 'Add to the scenario' }).click();
  await page.getByText('Added configuration from “TCP BBR (kernel)”').waitFor();
  await page.getByRole('group', { name: '3. bbr' }).waitFor();
  await shot(page, '04b-scheme-picker');
  await page.getByRole('button', { name: 'Save as new revision' }).click();
  await page.getByText('Saved as revision 2.').waitFor();
  const sc = await apiGet(`/api/scenarios/${scenarioId}`);
  const schemes = await apiGet('/api/schemes');
  // stored with the schema's defaults filled in: every field the catalogue gives is there as given
  const stored = sc.latest.spec.configurations.find((c) => c.name === 'bbr').transport;
  for (const [key, value] of Object.entries(schemes.find((s) => s.name === 'bbr').configuration.transport)) {
    assert.deepEqual(stored[key], value, key);
  }
  // it can be submitted: the plan counts it
  const submit = page.getByRole('region', { name: 'Run an experiment' });
  await submit.getByTestId('plan-runs').getByText('3 runs').waitFor();
});

ui.step('link settings beyond the main fields, and a scheme that needs host settings', async () => {
  const { page } = ui;
  await page.reload();
  await page.getByRole('heading', { name: `Scenario ${NAME}` }).waitFor();
  // every field of the emulator's configuration, from its own schema: the forward ACM hysteresis
  await page.getByText(/^All link settings/).click();
  const acm = page
    .getByRole('group', { name: 'Forward', exact: true })
    .getByRole('group', { name: 'Acm', exact: true });
  const hysteresis = acm.getByLabel('Hysteresis (dB)');
  await acm.getByText('range ≥ 0, ≤ 10').waitFor();
  await hysteresis.fill('12');
  await acm.getByRole('alert').getByText('must be ≤ 10').waitFor();
  await shot(page, '09b-link-bound-error');
  await hysteresis.fill('0.5');
  assert.equal(await acm.getByRole('alert').count(), 0);
  // a catalogue scheme whose entry has host_settings (withholding needs SACK off)
  const schemes = await apiGet('/api/schemes');
  const withhold = schemes.find((s) => s.name === 'withhold');
  assert.deepEqual(withhold.host_settings, { sack: false });
  const picker = page.getByRole('region', { name: 'Add a transport scheme' });
  await picker.getByLabel('Scheme').selectOption({ label: withhold.label });
  await picker.getByRole('button', { name: 'Add to the scenario' }).click();
  await page.getByRole('status').getByText('Set hosts.settings.sack: false (was true, the default)').waitFor();
  await page.getByRole('tab', { name: 'YAML' }).click();
  const yaml = await page.getByLabel('Scenario YAML').inputValue();
  assert.match(yaml, /hysteresis_db: 0\.5/);
  assert.match(yaml, /sack: false/);
  await page.getByRole('tab', { name: 'Form' }).click();
  await page.getByRole('button', { name: 'Save as new revision' }).click();
  await page.getByText('Saved as revision 3.').waitFor();
  const spec = (await apiGet(`/api/scenarios/${scenarioId}`)).latest.spec;
  assert.equal(spec.link.forward.acm.hysteresis_db, 0.5);
  assert.equal(spec.hosts.settings.sack, false);
  assert.ok(spec.configurations.some((c) => c.name === 'withhold' && c.receiver?.withhold));
});
