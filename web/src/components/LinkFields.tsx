// The link section: the emulator's configuration (emulator/CONFIG.md), described in the scenario
// schema by the emulator's own JSON Schema (`$defs.Link`, from `satlab-emulator --print-schema`).
// The most used fields come first with plain labels; every field is under "All link settings".
import { schemaAt, type JsonSchema } from '../lib/schema.ts';
import { ObjectFields, ScalarField, type FormCtx } from './SchemaForm.tsx';

interface LinkField {
  path: string[];
  label: string;
  help?: string;
  /** The default a direction applies where the schema's is null (it differs by direction). */
  dflt?: unknown;
}

export const LINK_FIELDS: { title: string; fields: LinkField[] }[] = [
  {
    title: 'Forward link (gateway → terminal, DVB-S2 ACM)',
    fields: [
      { path: ['forward', 'delay_ms'], label: 'One-way delay', dflt: 250 },
      { path: ['forward', 'symbol_rate_baud'], label: 'Symbol rate', dflt: 40e6 },
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
      { path: ['return', 'delay_ms'], label: 'One-way delay', dflt: 250 },
      { path: ['return', 'kind'], label: 'Physical layer', dflt: 'rcs2' },
      { path: ['return', 'rate_bps'], label: 'Rate (fixed only)' },
      { path: ['return', 'symbol_rate_baud'], label: 'Symbol rate', dflt: 4e6 },
    ],
  },
];

export function LinkFields({ ctx }: { ctx: FormCtx }) {
  const link: JsonSchema | undefined = ctx.root.$defs?.Link;
  if (!link) return null;
  return (
    <fieldset className="group">
      <legend>Link</legend>
      <p className="field-help">The emulator configuration (emulator/CONFIG.md). Empty fields take the default shown.</p>
      {LINK_FIELDS.map((g) => (
        <fieldset key={g.title} className="group group--item">
          <legend>{g.title}</legend>
          <div className="fields">
            {g.fields.map((f) => {
              const at = schemaAt(ctx.root, link, f.path);
              if (!at) return null;
              const schema = f.dflt === undefined ? at.schema : { ...at.schema, default: f.dflt };
              return <ScalarField key={f.path.join('.')} ctx={ctx} path={['link', ...f.path]} schema={schema} nullable={at.nullable} label={f.label} help={f.help} />;
            })}
          </div>
        </fieldset>
      ))}
      <details className="group group--item" data-testid="link-all">
        <summary>All link settings (geometry, MODCOD and PER tables, ACM modes, attenuation sources, sky noise, bit-error models, reordering)</summary>
        <ObjectFields ctx={ctx} path={['link']} schema={link} />
      </details>
    </fieldset>
  );
}
