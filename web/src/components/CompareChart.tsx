// A metric per configuration against the sweep variable, with 95% confidence bands (or, without a
// sweep, bars with 95% whiskers). A two-dimensional sweep's points are its value pairs, labelled
// "ber=1e-5, rack=false", in run order (the second dimension varies fastest). Drawn as SVG: a handful of points, crisp at any size, exportable
// as SVG as is and as PNG, and every mark carries its number for screen readers and tests.
import { useId, useRef } from 'react';
import type { AggregateRow } from '../api/client.ts';
import type { Metric } from '../api/types.ts';
import { download, toCsv } from '../lib/csv.ts';
import { fmtMetric, fmtSweep, METRIC_LABELS } from '../lib/format.ts';
import { svgToPng } from '../lib/svg.ts';
import { PALETTE } from '../lib/palette.ts';

export interface ComparePoint {
  configuration: string;
  sweep: string;
  mean: number | null;
  lo: number | null;
  hi: number | null;
  n: number;
}

export function comparePoints(rows: AggregateRow[], metric: Metric, sweepPaths: string[] = []): ComparePoint[] {
  return rows.map((r) => {
    // a metric the API does not report counts as no successful repetition
    const m = r.metrics[metric] ?? { mean: null, half_width: null, n: 0, values: [] };
    const hw = m.half_width;
    return {
      configuration: r.configuration,
      sweep: fmtSweep(r.sweep_value, sweepPaths),
      mean: m.mean,
      lo: m.mean !== null && hw !== null ? m.mean - hw : null,
      hi: m.mean !== null && hw !== null ? m.mean + hw : null,
      n: m.n,
    };
  });
}

function scaleOf(metric: Metric, max: number): { div: number; unit: string } {
  if (metric.endsWith('_bps')) return max >= 1e6 ? { div: 1e6, unit: 'Mbit/s' } : { div: 1e3, unit: 'kbit/s' };
  if (metric.endsWith('_s')) return { div: 1, unit: 's' };
  return { div: 1, unit: '' };
}

export function CompareChart({
  rows,
  metric,
  sweepLabel,
  sweepPaths = [],
  name,
}: {
  rows: AggregateRow[];
  metric: Metric;
  sweepLabel: string | undefined;
  sweepPaths?: string[];
  name: string;
}) {
  const id = useId();
  const svgRef = useRef<SVGSVGElement>(null);
  const pts = comparePoints(rows, metric, sweepPaths);
  const configs = [...new Set(pts.map((p) => p.configuration))];
  const sweeps = [...new Set(pts.map((p) => p.sweep))];
  const { div, unit } = scaleOf(metric, Math.max(0, ...pts.map((p) => p.hi ?? p.mean ?? 0)));
  const W = 760;
  const H = 320;
  const m = { l: 70, r: 20, t: 20, b: 60 };
  const w = W - m.l - m.r;
  const h = H - m.t - m.b;
  const ys = pts.flatMap((p) => [p.mean, p.hi].filter((v): v is number => v !== null)).map((v) => v / div);
  const yMax = Math.max(1e-9, ...ys) * 1.12;
  const sy = (v: number) => m.t + h - (v / div / yMax) * h;
  const groupW = w / Math.max(1, sweeps.length);
  const asLines = sweeps.length >= 2;
  const sxLine = (i: number) => m.l + groupW * (i + 0.5);
  const title = `${METRIC_LABELS[metric] ?? metric}${sweepLabel ? ` vs ${sweepLabel}` : ' per configuration'}`;
  const ticks = Array.from({ length: 6 }, (_, i) => (yMax * i) / 5);
  const find = (c: string, s: string) => pts.find((p) => p.configuration === c && p.sweep === s);

  function svgText(): string {
    const el = svgRef.current;
    if (!el) return '';
    const clone = el.cloneNode(true) as SVGSVGElement;
    clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
    return new XMLSerializer().serializeToString(clone);
  }

  return (
    <figure className="chart" aria-labelledby={`${id}-cap`}>
      <figcaption className="chart__head" id={`${id}-cap`}>
        <span className="chart__title">{title}</span>
        <span className="chart__tools">
          <button type="button" className="btn btn--small" onClick={() => void svgToPng(svgText()).then((b) => { download(`${name}.png`, b); })}>PNG</button>
          <button type="button" className="btn btn--small" onClick={() => { download(`${name}.svg`, svgText(), 'image/svg+xml'); }}>SVG</button>
          <button
            type="button"
            className="btn btn--small"
            onClick={() => {
              download(
                `${name}.csv`,
                toCsv(['configuration', 'sweep_value', `${metric}_mean`, 'ci95_low', 'ci95_high', 'n'], pts.map((p) => [p.configuration, p.sweep, p.mean, p.lo, p.hi, p.n])),
              );
            }}
          >
            CSV
          </button>
        </span>
      </figcaption>
      <svg ref={svgRef} viewBox={`0 0 ${W} ${H}`} className="compare-svg" role="img" aria-label={title} fontFamily="sans-serif" fontSize="12">
        <rect width={W} height={H} fill="#fff" />
        {ticks.map((t) => (
          <g key={t}>
            <line x1={m.l} x2={m.l + w} y1={sy(t * div)} y2={sy(t * div)} stroke="#e5e7eb" />
            <text x={m.l - 6} y={sy(t * div) + 4} textAnchor="end" fill="#374151">
              {Number(t.toPrecision(3))}
            </text>
          </g>
        ))}
        <text x={14} y={m.t + h / 2} transform={`rotate(-90 14 ${m.t + h / 2})`} textAnchor="middle" fill="#374151">
          {METRIC_LABELS[metric] ?? metric}
          {unit ? ` (${unit})` : ''}
        </text>
        <line x1={m.l} x2={m.l + w} y1={m.t + h} y2={m.t + h} stroke="#374151" />
        {sweeps.map((s, i) => (
          <text key={s} x={sxLine(i)} y={m.t + h + 18} textAnchor="middle" fill="#374151">
            {s}
          </text>
        ))}
        {sweepLabel ? (
          <text x={m.l + w / 2} y={H - 22} textAnchor="middle" fill="#374151">
            {sweepLabel}
          </text>
        ) : null}
        {configs.map((c, k) => {
          const color = PALETTE[k % PALETTE.length] ?? '#000';
          if (asLines) {
            const band = sweeps.map((s, i) => ({ i, p: find(c, s) })).filter((x) => x.p?.lo !== null && x.p?.hi !== null && x.p !== undefined);
            const upper = band.map(({ i, p }) => `${sxLine(i)},${sy(p?.hi ?? 0)}`);
            const lower = [...band].reverse().map(({ i, p }) => `${sxLine(i)},${sy(p?.lo ?? 0)}`);
            const line = sweeps
              .map((s, i) => ({ i, p: find(c, s) }))
              .filter((x) => x.p?.mean !== null && x.p !== undefined)
              .map(({ i, p }) => `${sxLine(i)},${sy(p?.mean ?? 0)}`);
            return (
              <g key={c}>
                {band.length >= 2 ? <polygon points={[...upper, ...lower].join(' ')} fill={color} opacity={0.15} /> : null}
                <polyline points={line.join(' ')} fill="none" stroke={color} strokeWidth={2} />
                {sweeps.map((s, i) => {
                  const p = find(c, s);
                  if (p?.mean === null || p === undefined) return null;
                  return (
                    <circle key={s} cx={sxLine(i)} cy={sy(p.mean)} r={4} fill={color} data-config={c} data-sweep={s} data-value={p.mean}>
                      <title>{`${c} at ${s}: ${fmtMetric(metric, p.mean)}${p.lo !== null ? ` (95% CI ${fmtMetric(metric, p.lo)} – ${fmtMetric(metric, p.hi)})` : ''}, n=${p.n}`}</title>
                    </circle>
                  );
                })}
              </g>
            );
          }
          const bw = (groupW * 0.7) / configs.length;
          return (
            <g key={c}>
              {sweeps.map((s, i) => {
                const p = find(c, s);
                if (p?.mean === null || p === undefined) return null;
                const x = m.l + groupW * i + groupW * 0.15 + k * bw;
                return (
                  <g key={s}>
                    <rect x={x} y={sy(p.mean)} width={bw - 4} height={m.t + h - sy(p.mean)} fill={color} data-config={c} data-sweep={s} data-value={p.mean}>
                      <title>{`${c}: ${fmtMetric(metric, p.mean)}${p.lo !== null ? ` (95% CI ${fmtMetric(metric, p.lo)} – ${fmtMetric(metric, p.hi)})` : ''}, n=${p.n}`}</title>
                    </rect>
                    <text x={x + (bw - 4) / 2} y={sy(p.mean) - 6} textAnchor="middle" fill="#111">
                      {fmtMetric(metric, p.mean)}
                    </text>
                    {p.lo !== null && p.hi !== null ? (
                      <g stroke="#111">
                        <line x1={x + (bw - 4) / 2} x2={x + (bw - 4) / 2} y1={sy(p.lo)} y2={sy(p.hi)} />
                        <line x1={x + (bw - 4) / 2 - 5} x2={x + (bw - 4) / 2 + 5} y1={sy(p.hi)} y2={sy(p.hi)} />
                        <line x1={x + (bw - 4) / 2 - 5} x2={x + (bw - 4) / 2 + 5} y1={sy(p.lo)} y2={sy(p.lo)} />
                      </g>
                    ) : null}
                    <text x={x + (bw - 4) / 2} y={m.t + h + 34} textAnchor="middle" fill="#374151">
                      {c}
                    </text>
                  </g>
                );
              })}
            </g>
          );
        })}
        {asLines
          ? configs.map((c, k) => (
              <g key={c}>
                <rect x={m.l + 10 + k * 120} y={m.t} width={10} height={10} fill={PALETTE[k % PALETTE.length]} />
                <text x={m.l + 24 + k * 120} y={m.t + 9} fill="#111">
                  {c}
                </text>
              </g>
            ))
          : null}
      </svg>
    </figure>
  );
}
