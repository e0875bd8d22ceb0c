// A dense time-series chart on uPlot (canvas; drag to zoom, double-click to reset), with export of
// the picture as PNG (the uPlot canvas with a title) and SVG (lib/svg.ts), and of the data as CSV.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { columnsToCsv, download } from '../lib/csv.ts';
import { PALETTE } from '../lib/palette.ts';
import { lineChartSvg } from '../lib/svg.ts';

// uPlot.Axis.Side.Right (a const enum, not importable under verbatimModuleSyntax)
const RIGHT = 1 as unknown as uPlot.Axis.Side;

export { PALETTE };

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color?: string;
  /** second y axis (right) */
  right?: boolean;
  /** step line (MODCOD ids) */
  stepped?: boolean;
}

export interface TimeChartProps {
  title: string;
  /** file name stem for exports */
  name: string;
  xLabel?: string;
  yLabel: string;
  yRightLabel?: string;
  xs: number[];
  series: ChartSeries[];
  height?: number;
  /** the visible x range changed by a zoom (undefined: reset) */
  onZoom?: (range: [number, number] | undefined) => void;
}

export function TimeChart({ title, name, xLabel = 'time (s)', yLabel, yRightLabel, xs, series, height = 240, onZoom }: TimeChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const zoomCb = useRef(onZoom);
  useEffect(() => {
    zoomCb.current = onZoom;
  }, [onZoom]);
  const zoomable = onZoom !== undefined;
  const shape = series.map((s) => `${s.label}:${String(s.right)}`).join('|');

  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const width = Math.max(320, el.clientWidth);
    const opts: uPlot.Options = {
      width,
      height,
      // with onZoom the caller refetches the selected range (the API downsamples it at full
      // detail); without, uPlot zooms the data it has (double-click resets)
      cursor: { drag: { x: true, y: false, setScale: !zoomable } },
      scales: { x: { time: false } },
      legend: { live: true },
      axes: [
        { label: xLabel, stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' } },
        { label: yLabel, stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' }, size: 70 },
        ...(yRightLabel ? [{ label: yRightLabel, scale: 'right', side: RIGHT, stroke: 'currentColor', grid: { show: false }, size: 60 }] : []),
      ],
      series: [
        { label: 't (s)' },
        ...series.map((s, i): uPlot.Series => {
          const out: uPlot.Series = {
            label: s.label,
            stroke: s.color ?? PALETTE[i % PALETTE.length] ?? '#000',
            width: 1.5,
            scale: s.right ? 'right' : 'y',
            spanGaps: true,
          };
          const stepped = s.stepped ? uPlot.paths.stepped?.({ align: 1 }) : undefined;
          if (stepped) out.paths = stepped;
          return out;
        }),
      ],
      hooks: {
        setSelect: [
          (u) => {
            if (zoomable && u.select.width > 0) {
              const lo = u.posToVal(u.select.left, 'x');
              const hi = u.posToVal(u.select.left + u.select.width, 'x');
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              zoomCb.current?.([lo, hi]);
            }
          },
        ],
      },
    };
    const u = new uPlot(opts, [xs, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    u.root.querySelector('canvas')?.setAttribute('aria-hidden', 'true');
    plot.current = u;
    const ro = new ResizeObserver(() => {
      u.setSize({ width: Math.max(320, el.clientWidth), height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // the plot is rebuilt when the series set changes; data updates go through setData below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, height, xLabel, yLabel, yRightLabel, zoomable]);

  useEffect(() => {
    plot.current?.setData([xs, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [xs, series]);

  function exportPng() {
    const u = plot.current;
    if (!u) return;
    const src = u.ctx.canvas;
    const c = document.createElement('canvas');
    const pad = 40;
    c.width = src.width;
    c.height = src.height + pad;
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.fillStyle = '#111';
    ctx.font = `${Math.round(16 * devicePixelRatio)}px sans-serif`;
    ctx.fillText(`${title} — ${series.map((s) => s.label).join(', ')}`, 10, 26);
    ctx.drawImage(src, 0, pad);
    c.toBlob((b) => {
      if (b) download(`${name}.png`, b);
    }, 'image/png');
  }

  function exportSvg() {
    const svg = lineChartSvg(
      title,
      xLabel,
      xs,
      series.map((s, i) => ({ label: s.label, color: s.color ?? PALETTE[i % PALETTE.length] ?? '#000', values: s.values })),
    );
    download(`${name}.svg`, svg, 'image/svg+xml');
  }

  function exportCsv() {
    download(`${name}.csv`, columnsToCsv([xLabel, ...series.map((s) => s.label)], [xs, ...series.map((s) => s.values)]));
  }

  return (
    <figure className="chart" aria-label={title}>
      <figcaption className="chart__head">
        <span className="chart__title">{title}</span>
        <span className="chart__tools">
          {onZoom ? <span className="hint">drag to zoom</span> : null}
          <button type="button" className="btn btn--small" onClick={exportPng}>PNG</button>
          <button type="button" className="btn btn--small" onClick={exportSvg}>SVG</button>
          <button type="button" className="btn btn--small" onClick={exportCsv}>CSV</button>
        </span>
      </figcaption>
      <div ref={holder} className="chart__plot" />
    </figure>
  );
}
