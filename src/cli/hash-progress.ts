/**
 * `hash` progress on a terminal: one line on stderr, redrawn a few times a second once the run
 * has lasted a second (small files print nothing), cleared before the summary. Counts, rate and
 * ETA only, fitted to the terminal's width.
 */
import { fitProgressLine, formatDuration, percentAndEta, type ProgressPart } from '../upload/progress.js';

export interface HashProgressOptions {
  write: (text: string) => void;
  /** The terminal's width. */
  columns: () => number;
  /** Input size (undefined for stdin): gives the percentage and ETA. */
  totalBytes: number | undefined;
  now?: () => number;
  /** Nothing is drawn before the run is this old (default 1000 ms). */
  delayMs?: number;
  /** Between redraws (default 250 ms). */
  intervalMs?: number;
}

const n = (x: number): string => x.toLocaleString('en-US');

export class HashProgress {
  private readonly now: () => number;
  private readonly start: number;
  private last = Number.NEGATIVE_INFINITY;
  private drawn = false;

  constructor(private readonly o: HashProgressOptions) {
    this.now = o.now ?? Date.now;
    this.start = this.now();
  }

  update(rows: number, bytesRead: number): void {
    const t = this.now();
    const elapsed = t - this.start;
    if (elapsed < (this.o.delayMs ?? 1000) || t - this.last < (this.o.intervalMs ?? 250)) return;
    this.last = t;
    const parts: ProgressPart[] = [{ text: `hashing: rows ${n(rows)}`, drop: 0 }];
    const eta = percentAndEta(bytesRead, this.o.totalBytes, elapsed, false);
    if (eta !== undefined) parts.push({ text: eta, drop: 1 });
    parts.push({ text: `${n(Math.round(rows / (elapsed / 1000)))} rows/s`, drop: 2 });
    parts.push({ text: `elapsed ${formatDuration(elapsed)}`, drop: 3 });
    this.o.write(`\r\x1b[2K${fitProgressLine(parts, this.o.columns())}`);
    this.drawn = true;
  }

  /** Clears the line, if one was drawn. */
  finish(): void {
    if (this.drawn) this.o.write('\r\x1b[2K');
    this.drawn = false;
  }
}
