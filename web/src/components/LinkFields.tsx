// The link section: the scenario schema types `link` as a free-form object (it is the emulator's
// configuration, emulator/CONFIG.md), so its most used fields are listed here with the bounds that
// document gives; everything else is edited in the YAML view.
import type { JsonSchema } from '../lib/schema.ts';
import { ScalarField, type FormCtx } from './SchemaForm.tsx';

interface LinkField {
  path: string[];
  schema: JsonSchema;
  label: string;
  help?: string;
}

const num = (minimum: number, maximum: number, dflt: number, description?: string): JsonSchema => ({
  type: 'number',
  minimum,
  maximum,
  default: dflt,
  ...(description ? { description } : {}),
});

export const LINK_FIELDS: { title: string; fields: LinkField[] }[] = [
  {
    title: 'Forward link (gateway → terminal, DVB-S2 ACM)',
    fields: [
      { path: ['forward', 'delay_ms'], schema: num(0, 10000, 250), label: 'One-way delay' },
      { path: ['forward', 'symbol_rate_baud'], schema: num(1e3, 1e9, 40e6), label: 'Symbol rate' },
      { path: ['forward', 'acm', 'refresh_ms'], schema: { type: 'integer', minimum: 1, maximum: 600000, default: 1000 }, label: 'ACM refresh period', help: 'also the tick of an attenuation trace' },
      { path: ['forward', 'acm', 'margin_db'], schema: num(0, 20, 0), label: 'ACM margin' },
      { path: ['forward', 'uplink', 'clear_sky_db'], schema: num(-20, 60, 20), label: 'Uplink clear-sky C/N' },
      { path: ['forward', 'downlink', 'clear_sky_db'], schema: num(-20, 60, 20), label: 'Downlink clear-sky C/N' },
      { path: ['forward', 'downlink', 'attenuation', 'type'], schema: { type: 'string', enum: ['constant', 'file', 'on_off', 'triangular'], default: 'constant' }, label: 'Downlink attenuation source' },
      { path: ['forward', 'downlink', 'attenuation', 'value_db'], schema: num(0, 100, 0), label: 'Constant attenuation' },
      { path: ['forward', 'downlink', 'attenuation', 'file'], schema: { type: 'string' }, label: 'Attenuation trace file', help: 'an uploaded file name, e.g. traces/fade.txt' },
      { path: ['forward', 'queue', 'limit_packets'], schema: { type: 'integer', minimum: 1, maximum: 1e7, default: 1000 }, label: 'Queue limit', help: 'drop-tail' },
      { path: ['forward', 'bit_errors', 'model'], schema: { type: 'string', enum: ['none', 'uniform', 'gilbert_elliott', 'pattern'], default: 'none' }, label: 'Bit-error model' },
      { path: ['forward', 'bit_errors', 'ber'], schema: num(0, 0.5, 0), label: 'Bit error rate', help: 'uniform model' },
    ],
  },
  {
    title: 'Return link (terminal → gateway)',
    fields: [
      { path: ['return', 'delay_ms'], schema: num(0, 10000, 250), label: 'One-way delay' },
      { path: ['return', 'kind'], schema: { type: 'string', enum: ['dvbs2', 'rcs2', 'fixed'], default: 'rcs2' }, label: 'Physical layer' },
      { path: ['return', 'rate_bps'], schema: num(1e3, 1e11, 1e6), label: 'Rate (fixed only)' },
      { path: ['return', 'symbol_rate_baud'], schema: num(1e3, 1e9, 4e6), label: 'Symbol rate' },
    ],
  },
];

export function LinkFields({ ctx }: { ctx: FormCtx }) {
  return (
    <fieldset className="group">
      <legend>Link</legend>
      <p className="field-help">The emulator configuration (emulator/CONFIG.md). Empty fields take the default shown; other link settings (geometry, reordering, RCS2 details) are in the YAML view.</p>
      {LINK_FIELDS.map((g) => (
        <fieldset key={g.title} className="group group--item">
          <legend>{g.title}</legend>
          <div className="fields">
            {g.fields.map((f) => (
              <ScalarField key={f.path.join('.')} ctx={ctx} path={['link', ...f.path]} schema={f.schema} label={f.label} help={f.help} />
            ))}
          </div>
        </fieldset>
      ))}
    </fieldset>
  );
}
