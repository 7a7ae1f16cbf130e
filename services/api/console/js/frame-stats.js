// Counting the 3D view's animation frames: how many, the frames a second over the last second,
// and the intervals of the last FRAME_SAMPLES frames for their percentiles.

/** Frame intervals kept for the percentiles. */
const FRAME_SAMPLES = 240;

/** The `p`-quantile of the sorted numbers `sorted`. */
function quantile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))] : 0;
}

export class FrameStats {
  constructor() {
    this.frames = 0;
    this.fps = 0;
    this.times = new Float32Array(FRAME_SAMPLES);
  }

  /** Counts the animation frame of time `now`. */
  count(now) {
    if (this.last !== undefined) this.times[this.frames % FRAME_SAMPLES] = now - this.last;
    this.last = now;
    this.frames += 1;
    this.counted = (this.counted || 0) + 1;
    if (this.since === undefined) this.since = now;
    if (now - this.since >= 1000) {
      this.fps = Math.round((this.counted * 1000) / (now - this.since));
      this.counted = 0;
      this.since = now;
    }
  }

  /** The percentiles of the last FRAME_SAMPLES frame intervals, in milliseconds. */
  percentiles() {
    const sorted = Array.from(this.times.subarray(0, Math.min(this.frames - 1, FRAME_SAMPLES))).sort((a, b) => a - b);
    return { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), max: quantile(sorted, 1) };
  }
}
