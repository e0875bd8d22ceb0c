// The link section, drawn from the emulator's own JSON Schema (the scenario schema's `link`, from
// `satlab-emulator --print-schema`): the most used fields first, with labels of their own, then
// every field of the configuration under "All link settings" (units, bounds, defaults and the
// fields of the chosen attenuation source, bit-error model, ACM mode or link kind).
import { useState } from 'react';
import { schemaAt } from '../lib/schema.ts';
import { ObjectFields, ScalarField, type FormCtx } from './SchemaForm.tsx';

interface MainField {
  path: string[];
  label: string;
  help?: string;
}

export const MAIN_LINK_FIELDS: { title: string; fields: MainField[] }[] = [
  {
    title: 'Forward link (gateway → terminal, DVB-S2 ACM)',
    fields: [
      { path: ['forward', 'delay_ms'], label: 'One-way delay', help: 'default 250 ms (or from the geometry)' },
      { path: ['forward', 'symbol_rate_baud'], label: 'Symbol rate', help: 'default 40e6' },
      { path: ['forward', 'acm', 'refresh_ms'], label: 'ACM refresh period', help: 'also the tick of an attenuation trace' },
      { path: ['forward', 'acm', 'margin_db'], label: 'ACM margin' },
      { path: ['forward', 'uplink', 'clear_sky_db'], label: 'Uplink clear-sky C/N' },
      { path: ['forward', 'downlink', 'clear_sky_db'], label: 'Downlink clear-sky C/N' },
      { path: ['forward', 'downlink', 'attenuation', 'type'], label: 'Downlink attenuation source' },
      { path: ['forward', 'downlink', 'attenuation', 'value_db'], label: 'Constant attenuation' },
      { path: ['forward', 'downlink', 'attenuation', 'file'], label: 'Attenuation trace file', help: 'an uploaded file name, e.g. traces/fade.txt' },
      { path: ['forward', 'queue', 'limit_packets'], label: 'Queue limit', help: 'drop-tail' },
      { path: ['forward', 'bit_errors', 'model'], label: 'Bit-error model' },
      { path: ['forward', 'bit_errors', 'ber'], label: 'Bit error rate', help: 'uniform model' },
    ],
  },
  {
    title: 'Return link (terminal → gateway)',
    fields: [
      { path: ['return', 'delay_ms'], label: 'One-way delay', help: 'default 250 ms (or from the geometry)' },
      { path: ['return', 'kind'], label: 'Physical layer', help: 'default rcs2' },
      { path: ['return', 'rate_bps'], label: 'Rate (fixed only)' },
      { path: ['return', 'symbol_rate_baud'], label: 'Symbol rate', help: 'default 4e6' },
    ],
  },
];

export function LinkFields({ ctx }: { ctx: FormCtx }) {
  const [all, setAll] = useState(false);
  const link = ctx.root.properties?.link ?? {};
  // Every problem the API or the emulator found in the link, also those of fields not drawn now.
  const problems = Object.entries(ctx.errors).filter(([k]) => k === 'link' || k.startsWith('link.'));
  return (
    <fieldset className="group">
      <legend>Link</legend>
      <p className="field-help">The emulator configuration (emulator/CONFIG.md). Empty fields take the default shown.</p>
      {problems.length ? (
        <ul className="field-error" role="alert" aria-label="Link problems">
          {problems.map(([k, msgs]) => (
            <li key={k}>
              {k}: {msgs.join('; ')}
            </li>
          ))}
        </ul>
      ) : null}
      {MAIN_LINK_FIELDS.map((g) => (
        <fieldset key={g.title} className="group group--item">
          <legend>{g.title}</legend>
          <div className="fields">
            {g.fields.map((f) => {
              const at = schemaAt(ctx.root, link, f.path);
              return at ? <ScalarField key={f.path.join('.')} ctx={ctx} path={['link', ...f.path]} schema={at.schema} nullable={at.nullable} label={f.label} help={f.help} /> : null;
            })}
          </div>
        </fieldset>
      ))}
      <details
        className="group"
        open={all}
        onToggle={(e) => {
          setAll(e.currentTarget.open);
        }}
      >
        <summary>All link settings (both directions: PHY, ACM, hops, attenuation, queue, bit errors, reordering, geometry)</summary>
        {/* Drawn only when open: the main fields above would otherwise appear twice. */}
        {all ? <ObjectFields ctx={ctx} path={['link']} schema={link} skip={link['x-set-by-runner'] ?? []} /> : null}
      </details>
    </fieldset>
  );
}
