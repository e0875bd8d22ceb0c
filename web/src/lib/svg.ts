// SVG export of line charts (the uPlot canvas has no vector form): the same series drawn as
// polylines on a plain SVG with axes ticks, decimated to at most ~2 points per pixel column.

export interface SvgSeries {
  label: string;
  color: string;
  values: readonly (number | null)[];
}

function niceTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) ?? step0;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function lineChartSvg(
  title: string,
  xLabel: string,
  xs: readonly number[],
  series: readonly SvgSeries[],
  width = 900,
  height = 360,
): string {
  const m = { l: 70, r: 20, t: 36, b: 46 };
  const w = width - m.l - m.r;
  const h = height - m.t - m.b;
  const finite = (a: readonly (number | null)[]) => a.filter((v): v is number => v !== null && Number.isFinite(v));
  const allY = series.flatMap((s) => finite(s.values));
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  let yMin = Math.min(0, ...allY);
  let yMax = Math.max(...allY);
  if (!Number.isFinite(yMax) || yMax === yMin) {
    yMax = yMin + 1;
  }
  if (!Number.isFinite(yMin)) yMin = 0;
  const sx = (x: number) => m.l + ((x - xMin) / (xMax - xMin || 1)) * w;
  const sy = (y: number) => m.t + h - ((y - yMin) / (yMax - yMin)) * h;
  const stride = Math.max(1, Math.floor(xs.length / (2 * w)));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${m.l}" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<line x1="${m.l}" y1="${m.t + h}" x2="${m.l + w}" y2="${m.t + h}" stroke="#333"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${m.t + h}" stroke="#333"/>`,
  ];
  for (const t of niceTicks(xMin, xMax)) {
    parts.push(`<text x="${sx(t).toFixed(1)}" y="${m.t + h + 16}" text-anchor="middle">${t}</text>`);
  }
  for (const t of niceTicks(yMin, yMax)) {
    parts.push(
      `<line x1="${m.l}" y1="${sy(t).toFixed(1)}" x2="${m.l + w}" y2="${sy(t).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${m.l - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end">${t}</text>`,
    );
  }
  parts.push(`<text x="${m.l + w / 2}" y="${height - 8}" text-anchor="middle">${esc(xLabel)}</text>`);
  series.forEach((s, k) => {
    let d = '';
    let pen = false;
    for (let i = 0; i < xs.length; i += stride) {
      const y = s.values[i];
      const x = xs[i];
      if (y === null || y === undefined || !Number.isFinite(y) || x === undefined) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${sx(x).toFixed(1)} ${sy(y).toFixed(1)}`;
      pen = true;
    }
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"><title>${esc(s.label)}</title></path>`);
    parts.push(
      `<rect x="${m.l + 10 + k * 160}" y="${m.t + 4}" width="10" height="10" fill="${s.color}"/>`,
      `<text x="${m.l + 24 + k * 160}" y="${m.t + 13}">${esc(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** Rasterizes an SVG string to a PNG blob (for charts drawn as SVG). */
export async function svgToPng(svg: string): Promise<Blob> {
  const img = new Image();
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    await new Promise<void>((resolve, reject) => {
      img.onload = () => {
        resolve();
      };
      img.onerror = () => {
        reject(new Error('cannot render the SVG'));
      };
      img.src = url;
    });
    const c = document.createElement('canvas');
    c.width = img.naturalWidth * 2;
    c.height = img.naturalHeight * 2;
    const ctx = c.getContext('2d');
    if (!ctx) throw new Error('no canvas');
    ctx.scale(2, 2);
    ctx.drawImage(img, 0, 0);
    return await new Promise<Blob>((resolve, reject) => {
      c.toBlob((b) => {
        if (b) resolve(b);
        else reject(new Error('PNG encoding failed'));
      }, 'image/png');
    });
  } finally {
    URL.revokeObjectURL(url);
  }
}
