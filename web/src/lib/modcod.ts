// What an attenuation trace does to the forward link: Es/N0, the MODCOD ACM picks, the useful rate.
//
// The same algebra as the emulator (emulator/CONFIG.md, crates/linkmodel) and OpenSAND:
//   C/N_up   = clear_sky_up   - A_up            (dB)
//   C/N_down = clear_sky_down - A_down          (dB; a trace on the downlink gives A_down)
//   Es/N0    = 1 / (1/cn_up + 1/cn_down)        (linear terms, cn = 10^(C/N/10))
//   MODCOD   = the one with the highest required Es/N0 <= Es/N0 - margin (else the most robust)
//   useful rate = (K_bch - 80) x Rs / frame symbols
// where a normal PLFRAME is 90 PLHEADER symbols + 64800 / bits-per-symbol data symbols (slots of
// 90) + with pilots one 36-symbol block after every 16 slots (floor((slots - 1) / 16) blocks), and
// the data field is K_bch (EN 302 307-1 Table 5a) minus the 80-bit BBHEADER. Without pilots this is
// exactly Rs x Table 13 efficiency. Not modelled here: the ACM loop's feedback delay and
// hysteresis (the emulator reacts one report period plus a return-link delay later).

export interface Modcod {
  id: number;
  modulation: 'QPSK' | '8PSK' | '16APSK' | '32APSK';
  rate: string;
  /** bit/symbol, EN 302 307-1 Table 13 (counts PLHEADER and BBHEADER, no pilots). */
  efficiency: number;
  /** Required Es/N0 (dB) for quasi-error-free operation (PER 1e-7), AWGN. */
  esn0Db: number;
}

/** EN 302 307-1 Table 13, normal frames (crates/linkmodel/src/data/dvbs2_modcod.txt). */
export const DVBS2_MODCODS: readonly Modcod[] = [
  { id: 1, modulation: 'QPSK', rate: '1/4', efficiency: 0.490243, esn0Db: -2.35 },
  { id: 2, modulation: 'QPSK', rate: '1/3', efficiency: 0.656448, esn0Db: -1.24 },
  { id: 3, modulation: 'QPSK', rate: '2/5', efficiency: 0.789412, esn0Db: -0.3 },
  { id: 4, modulation: 'QPSK', rate: '1/2', efficiency: 0.988858, esn0Db: 1.0 },
  { id: 5, modulation: 'QPSK', rate: '3/5', efficiency: 1.188304, esn0Db: 2.23 },
  { id: 6, modulation: 'QPSK', rate: '2/3', efficiency: 1.322253, esn0Db: 3.1 },
  { id: 7, modulation: 'QPSK', rate: '3/4', efficiency: 1.487473, esn0Db: 4.03 },
  { id: 8, modulation: 'QPSK', rate: '4/5', efficiency: 1.587196, esn0Db: 4.68 },
  { id: 9, modulation: 'QPSK', rate: '5/6', efficiency: 1.654663, esn0Db: 5.18 },
  { id: 10, modulation: 'QPSK', rate: '8/9', efficiency: 1.766451, esn0Db: 6.2 },
  { id: 11, modulation: 'QPSK', rate: '9/10', efficiency: 1.788612, esn0Db: 6.42 },
  { id: 12, modulation: '8PSK', rate: '3/5', efficiency: 1.779991, esn0Db: 5.5 },
  { id: 13, modulation: '8PSK', rate: '2/3', efficiency: 1.980636, esn0Db: 6.62 },
  { id: 14, modulation: '8PSK', rate: '3/4', efficiency: 2.228124, esn0Db: 7.91 },
  { id: 15, modulation: '8PSK', rate: '5/6', efficiency: 2.478562, esn0Db: 9.35 },
  { id: 16, modulation: '8PSK', rate: '8/9', efficiency: 2.646012, esn0Db: 10.69 },
  { id: 17, modulation: '8PSK', rate: '9/10', efficiency: 2.679207, esn0Db: 10.98 },
  { id: 18, modulation: '16APSK', rate: '2/3', efficiency: 2.637201, esn0Db: 8.97 },
  { id: 19, modulation: '16APSK', rate: '3/4', efficiency: 2.966728, esn0Db: 10.21 },
  { id: 20, modulation: '16APSK', rate: '4/5', efficiency: 3.165623, esn0Db: 11.03 },
  { id: 21, modulation: '16APSK', rate: '5/6', efficiency: 3.300184, esn0Db: 11.61 },
  { id: 22, modulation: '16APSK', rate: '8/9', efficiency: 3.523143, esn0Db: 12.89 },
  { id: 23, modulation: '16APSK', rate: '9/10', efficiency: 3.567342, esn0Db: 13.13 },
  { id: 24, modulation: '32APSK', rate: '3/4', efficiency: 3.703295, esn0Db: 12.73 },
  { id: 25, modulation: '32APSK', rate: '4/5', efficiency: 3.951571, esn0Db: 13.64 },
  { id: 26, modulation: '32APSK', rate: '5/6', efficiency: 4.11954, esn0Db: 14.28 },
  { id: 27, modulation: '32APSK', rate: '8/9', efficiency: 4.397854, esn0Db: 15.69 },
  { id: 28, modulation: '32APSK', rate: '9/10', efficiency: 4.453027, esn0Db: 16.05 },
];

/** K_bch of normal FECFRAMEs by code rate (EN 302 307-1 Table 5a). */
const KBCH_NORMAL: Readonly<Record<string, number>> = {
  '1/4': 16008,
  '1/3': 21408,
  '2/5': 25728,
  '1/2': 32208,
  '3/5': 38688,
  '2/3': 43040,
  '3/4': 48408,
  '4/5': 51648,
  '5/6': 53840,
  '8/9': 57472,
  '9/10': 58192,
};

const BITS_PER_SYMBOL: Readonly<Record<Modcod['modulation'], number>> = {
  QPSK: 2,
  '8PSK': 3,
  '16APSK': 4,
  '32APSK': 5,
};

export function modcodName(m: Modcod): string {
  return `${m.modulation} ${m.rate}`;
}

export function modcodById(id: number): Modcod | undefined {
  return DVBS2_MODCODS.find((m) => m.id === id);
}

/** Symbols of one normal PLFRAME of this MODCOD. */
export function frameSymbols(m: Modcod, pilots: boolean): number {
  const slots = 64800 / BITS_PER_SYMBOL[m.modulation] / 90;
  const pilotBlocks = pilots ? Math.floor((slots - 1) / 16) : 0;
  return 90 + slots * 90 + pilotBlocks * 36;
}

/** Data-field bit rate (before GSE encapsulation) of a MODCOD at a symbol rate. */
export function usefulRateBps(m: Modcod, symbolRateBaud: number, pilots = true): number {
  const kbch = KBCH_NORMAL[m.rate];
  if (kbch === undefined) {
    return m.efficiency * symbolRateBaud;
  }
  return ((kbch - 80) * symbolRateBaud) / frameSymbols(m, pilots);
}

/** Total Es/N0 (dB) of an uplink and a downlink C/N (dB), combined in linear terms. */
export function combinedEsN0Db(cnUpDb: number, cnDownDb: number): number {
  const lin = 1 / (10 ** (-cnUpDb / 10) + 10 ** (-cnDownDb / 10));
  return 10 * Math.log10(lin);
}

/** OpenSAND's rule: the MODCOD with the highest required Es/N0 <= esn0 - margin, else the most
 * robust one. */
export function pickModcod(esn0Db: number, marginDb = 0, table: readonly Modcod[] = DVBS2_MODCODS): Modcod {
  let best: Modcod | undefined;
  let robust: Modcod | undefined;
  for (const m of table) {
    if (robust === undefined || m.esn0Db < robust.esn0Db) robust = m;
    if (m.esn0Db <= esn0Db - marginDb && (best === undefined || m.esn0Db > best.esn0Db)) best = m;
  }
  if (!robust) throw new Error('empty MODCOD table');
  return best ?? robust;
}

export interface TracePoint {
  tick: number;
  db: number;
}

export class TraceError extends Error {}

/** Parses an OpenSAND attenuation file: `<tick> <dB>` lines, `#` comments, ticks increasing. */
export function parseAttenuationTrace(text: string): TracePoint[] {
  const points: TracePoint[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) return;
    const parts = line.split(/[\s,]+/);
    const tick = Number(parts[0]);
    const db = Number(parts[1]);
    const where = `line ${i + 1}`;
    if (parts.length !== 2 || !Number.isInteger(tick) || tick < 0 || !Number.isFinite(db)) {
      problems.push(`${where}: expected "<tick> <dB>" with a whole tick >= 0, got "${line}"`);
      return;
    }
    if (db < -50 || db > 100) {
      problems.push(`${where}: ${db} dB is outside [-50, 100] dB`);
      return;
    }
    const prev = points[points.length - 1];
    if (prev && tick <= prev.tick) {
      problems.push(`${where}: tick ${tick} is not after the previous tick ${prev.tick}`);
      return;
    }
    points.push({ tick, db });
  });
  if (problems.length) throw new TraceError(problems.join('\n'));
  if (!points.length) throw new TraceError('the trace has no "<tick> <dB>" line');
  return points;
}

/** The attenuation at a (fractional) tick: linear interpolation, first value before the first
 * line, last value held after the last one (the emulator's rule without `loop`). */
export function attenuationAt(points: readonly TracePoint[], tick: number): number {
  const first = points[0];
  const last = points[points.length - 1];
  if (!first || !last) return 0;
  if (tick <= first.tick) return first.db;
  if (tick >= last.tick) return last.db;
  let lo = 0;
  let hi = points.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if ((points[mid]?.tick ?? Infinity) <= tick) lo = mid;
    else hi = mid;
  }
  const a = points[lo] ?? first;
  const b = points[hi] ?? last;
  return a.db + ((b.db - a.db) * (tick - a.tick)) / (b.tick - a.tick);
}

export interface LinkBudget {
  /** length of one tick (the ACM refresh period unless the scenario sets tick_ms) */
  tickMs: number;
  symbolRateBaud: number;
  clearSkyUpDb: number;
  clearSkyDownDb: number;
  marginDb: number;
  pilots: boolean;
}

export const DEFAULT_BUDGET: LinkBudget = {
  tickMs: 1000,
  symbolRateBaud: 40e6,
  clearSkyUpDb: 20,
  clearSkyDownDb: 20,
  marginDb: 0,
  pilots: true,
};

export interface TraceImplication {
  t: number[];
  attenuationDb: number[];
  esn0Db: number[];
  modcod: number[];
  rateBps: number[];
}

/** Samples a downlink trace once per tick and derives Es/N0, MODCOD and useful rate. */
export function implications(points: readonly TracePoint[], budget: LinkBudget): TraceImplication {
  const out: TraceImplication = { t: [], attenuationDb: [], esn0Db: [], modcod: [], rateBps: [] };
  const last = points[points.length - 1];
  if (!last) return out;
  const end = Math.max(last.tick, 1);
  for (let k = 0; k <= end; k++) {
    const a = attenuationAt(points, k);
    const esn0 = combinedEsN0Db(budget.clearSkyUpDb, budget.clearSkyDownDb - a);
    const m = pickModcod(esn0, budget.marginDb);
    out.t.push((k * budget.tickMs) / 1000);
    out.attenuationDb.push(a);
    out.esn0Db.push(esn0);
    out.modcod.push(m.id);
    out.rateBps.push(usefulRateBps(m, budget.symbolRateBaud, budget.pilots));
  }
  return out;
}
