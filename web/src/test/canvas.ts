// What uPlot needs from a browser that jsdom lacks (matchMedia, ResizeObserver, Path2D, a 2D
// canvas context), with the canvas recording each stroke: the stroke style and how many points
// its path had, so a test can tell which lines were drawn. Import it before anything that
// imports uPlot (uPlot reads matchMedia when it loads).
export interface Stroke {
  style: string;
  points: number;
}

export const strokes: Stroke[] = [];

const noop = () => undefined;

class RecordingPath {
  points = 0;
  moveTo() {
    this.points += 1;
  }
  lineTo() {
    this.points += 1;
  }
  // clipping rectangles, point markers, joined paths: not lines
  rect = noop;
  arc = noop;
  closePath = noop;
  addPath = noop;
  bezierCurveTo = noop;
}

globalThis.matchMedia = ((media: string) => ({
  matches: false,
  media,
  addEventListener: noop,
  removeEventListener: noop,
})) as unknown as typeof globalThis.matchMedia;
globalThis.ResizeObserver = class {
  observe = noop;
  unobserve = noop;
  disconnect = noop;
};
globalThis.Path2D = RecordingPath as unknown as typeof Path2D;

HTMLCanvasElement.prototype.getContext = function getContext(this: HTMLCanvasElement) {
  const state: Record<string | symbol, unknown> = { canvas: this };
  return new Proxy(state, {
    get(target, key) {
      if (key in target) return target[key];
      if (key === 'measureText') return () => ({ width: 10 });
      if (key === 'stroke') {
        return (p?: RecordingPath) => {
          strokes.push({ style: String(target.strokeStyle), points: p?.points ?? 0 });
        };
      }
      return noop; // every other drawing call: nothing to record
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
  });
} as unknown as typeof HTMLCanvasElement.prototype.getContext;
