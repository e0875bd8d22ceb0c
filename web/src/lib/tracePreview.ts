// What the trace panel sends to POST /api/link/preview and reads from its answer. The DVB-S2
// arithmetic itself (MODCOD table, Es/N0 algebra, ACM rule, frame rates) is the link model's
// (crates/linkmodel, through the emulator binary): nothing of it is copied here.
import type { Schemas } from '../api/client.ts';
import { getIn } from './yamlDoc.ts';

export type PreviewIn = Schemas['PreviewIn'];
export type PreviewOut = Schemas['PreviewOut'];
export type ModcodOut = Schemas['ModcodOut'];
/** The forward link's part of a preview request: everything but the trace. */
export type LinkBudget = Omit<PreviewIn, 'trace'>;

function numAt(data: unknown, path: string[], dflt: number): number {
  const v = getIn(data, path);
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

/** The scenario's forward link as the preview needs it (the emulator's defaults where unset). */
export function budgetOf(scenario: unknown): LinkBudget {
  const f = ['link', 'forward'];
  const refresh = numAt(scenario, [...f, 'acm', 'refresh_ms'], 1000);
  return {
    tick_ms: numAt(scenario, [...f, 'downlink', 'attenuation', 'tick_ms'], refresh),
    symbol_rate_baud: numAt(scenario, [...f, 'symbol_rate_baud'], 40e6),
    clear_sky_up_db: numAt(scenario, [...f, 'uplink', 'clear_sky_db'], 20),
    clear_sky_down_db: numAt(scenario, [...f, 'downlink', 'clear_sky_db'], 20),
    margin_db: numAt(scenario, [...f, 'acm', 'margin_db'], 0),
    pilots: getIn(scenario, [...f, 'pilots']) !== false,
    // the embedded table the link runs with (a modcod_table file is not previewed)
    table: getIn(scenario, [...f, 'modcod_set']) === 'dvbs2x' ? 'dvbs2x' : 'dvbs2',
  };
}

export interface PreviewSummary {
  deepestDb: number;
  /** the most robust MODCOD the trace needs */
  worst: ModcodOut | undefined;
  minRateBps: number;
  clearSkyRateBps: number | undefined;
}

/** The headline of a preview: its deepest fade and what the link falls back to there. */
export function summarize(p: PreviewOut): PreviewSummary {
  const worstId = Math.min(...p.modcod);
  return {
    deepestDb: Math.max(...p.attenuation_db),
    worst: p.modcods.find((m) => m.id === worstId),
    minRateBps: Math.min(...p.rate_bps),
    clearSkyRateBps: p.rate_bps[0],
  };
}
