// The link form drawn from the emulator's real schema (api/satlab/link_schema.json), editing a
// YAML text the way the editor does.
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';
import { describe, expect, it } from 'vitest';
import linkSchemaText from '../../../api/satlab/link_schema.json?raw';
import type { JsonSchema } from '../lib/schema.ts';
import { parseYaml, textEdits } from '../lib/yamlDoc.ts';
import { LinkFields } from './LinkFields.tsx';
import type { FormCtx } from './SchemaForm.tsx';

const link = JSON.parse(linkSchemaText) as JsonSchema;
const root: JsonSchema = { $defs: link.$defs ?? {}, properties: { link: { ...link, 'x-set-by-runner': ['seed', 'ports', 'control', 'telemetry'] } } };
const START = 'name: t\nlink:\n  forward: {delay_ms: 260}   # GEO\n';
const yaml = () => screen.getByTestId('yaml').textContent;

function Editor() {
  const [t, setT] = useState(START);
  const ctx: FormCtx = {
    root,
    data: parseYaml(t).data,
    errors: {},
    readOnly: false,
    ...textEdits(setT),
  };
  return (
    <>
      <LinkFields ctx={ctx} />
      <pre data-testid="yaml">{t}</pre>
    </>
  );
}

const group = (name: string, within_: HTMLElement = document.body) => within(within_).getByRole('group', { name });

describe('LinkFields', () => {
  it('shows the main fields with the bounds and units of the emulator schema', () => {
    render(<Editor />);
    const margin = screen.getByLabelText('ACM margin (dB)');
    expect(margin).toHaveAccessibleDescription(/range ≥ 0, ≤ 20 · default 0/);
    expect(screen.getAllByLabelText('One-way delay (ms)')[0]).toHaveValue('260');
    // runner-set sections are not offered, and the rest waits behind "All link settings"
    expect(screen.queryByLabelText('Hysteresis (dB)')).toBeNull();
  });

  it('offers every field, checks bounds as you type and keeps the YAML', async () => {
    render(<Editor />);
    await userEvent.click(screen.getByText(/^All link settings/));
    expect(screen.queryByRole('group', { name: 'Ports' })).toBeNull();
    const fwd = group('Forward');
    const acm = group('Acm', fwd);
    const hyst = within(acm).getByLabelText('Hysteresis (dB)');
    await userEvent.type(hyst, '12');
    expect(within(acm).getByRole('alert')).toHaveTextContent('must be ≤ 10');
    expect(yaml()).toContain('forward: {delay_ms: 260, acm: {hysteresis_db: 12}}');
    expect(yaml()).toContain('# GEO');
    await userEvent.clear(hyst);
    await userEvent.type(hyst, '0.5');
    expect(within(acm).queryByRole('alert')).toBeNull();
    // reordering, sky noise, geometry: beyond the old main fields
    expect(within(group('Reorder', fwd)).getByLabelText('Jitter (ms)')).toHaveAccessibleDescription(/≤ 10000/);
    expect(screen.getByRole('button', { name: 'Add geometry' })).toBeInTheDocument();
    // Renders every link field and types into them: 2.5-4 s on the 2-core CI machine, over the
    // default 5 s when other work shares it.
  }, 20_000);

  it('shows the fields of the chosen attenuation source and bit-error model', async () => {
    render(<Editor />);
    await userEvent.click(screen.getByText(/^All link settings/));
    const att = group('Attenuation', group('Downlink', group('Forward')));
    expect(within(att).getByLabelText('Value (dB)')).toBeInTheDocument();
    expect(within(att).queryByLabelText('File')).toBeNull();
    await userEvent.selectOptions(within(att).getByLabelText('Type'), 'triangular');
    expect(within(att).getByLabelText('Period (ticks)')).toBeInTheDocument();
    expect(within(att).getByLabelText('Slope db per tick (dB/tick)')).toBeInTheDocument();
    expect(within(att).queryByLabelText('Value (dB)')).toBeNull();
    const be = group('Bit errors', group('Forward'));
    expect(within(be).queryByLabelText('Mean bad (bits)')).toBeNull();
    await userEvent.selectOptions(within(be).getByLabelText('Model'), 'gilbert_elliott');
    expect(within(be).getByLabelText('Mean bad (bits)')).toHaveAccessibleDescription(/range ≥ 1, ≤ 1000000000000000/);
  });
  it('edits the forward queue\'s traffic classes: add a class, its DSCPs, priority and a flow rule', async () => {
    render(<Editor />);
    await userEvent.click(screen.getByText(/^All link settings/));
    const queue = group('Queue', group('Forward'));
    const classes = within(queue).getByRole('group', { name: /^Classes/ });
    await userEvent.click(within(classes).getByRole('button', { name: 'Add a traffic class' }));
    expect(yaml()).toMatch(/classes: \[\{name: new\}\]/);
    const cls = within(classes).getByRole('group', { name: '1. new' });
    const name = within(cls).getByLabelText('Name');
    await userEvent.clear(name);
    await userEvent.type(name, 'ef');
    await userEvent.type(within(cls).getByLabelText('Dscp'), '46');
    await userEvent.tab();
    await userEvent.type(within(cls).getByLabelText('Priority'), '0');
    const flows = within(cls).getByRole('group', { name: /^Flows/ });
    await userEvent.click(within(flows).getByRole('button', { name: 'Add a flow rule' }));
    expect(yaml()).toContain('name: ef');
    expect(yaml()).toContain('dscp: [46]');
    expect(yaml()).toContain('priority: 0');
    expect(yaml()).toContain('flows: [{}]');
    // the class's own remove button comes after its fields (the flow rule has one too)
    const [ownRemove] = within(cls).getAllByRole('button', { name: 'Remove item 1' }).reverse();
    if (!ownRemove) throw new Error('no remove button');
    await userEvent.click(ownRemove);
    expect(yaml()).not.toContain('name: ef');
  });
});
