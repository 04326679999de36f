/**
 * Progress output for uploads on stderr: a line redrawn in place on a terminal, plain lines
 * at an interval otherwise. Only counts and rates: never identifiers.
 */
import type { UploadProgress } from './types.js';

export interface ProgressPrinterOptions {
  write: (text: string) => void;
  /** Redraw one line (terminal) or print plain lines. */
  tty: boolean;
  /** Plain mode: seconds between lines (default 10). */
  intervalMs?: number;
  now?: () => number;
}

const n = (x: number): string => x.toLocaleString('en-US');

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** One line describing the upload so far. */
export function formatUploadProgress(p: UploadProgress): string {
  const seconds = p.elapsedMs / 1000;
  const rate = seconds > 0 ? Math.round(p.rows / seconds) : 0;
  const parts = [
    `rows ${n(p.rows)}`,
    `users ${n(p.users)}`,
    `requests ${n(p.batchesConfirmed + p.batchesSkipped)} confirmed${p.batchesFailed > 0 ? `, ${n(p.batchesFailed)} failed` : ''}${p.inFlight > 0 ? `, ${p.inFlight} in flight` : ''}`,
    `${n(rate)} rows/s`,
    `rate-limit waits ${n(p.rateLimitWaits)}`,
  ];
  if (p.retries > 0) parts.push(`retries ${n(p.retries)}`);
  if (p.waitedMs >= 1000) parts.push(`waited ${duration(p.waitedMs)}`);
  if (p.inputTotalBytes !== undefined && p.inputBytesRead !== undefined && p.inputTotalBytes > 0) {
    const fraction = Math.min(1, p.inputBytesRead / p.inputTotalBytes);
    const eta = fraction > 0 && !p.done ? (p.elapsedMs / fraction) * (1 - fraction) : 0;
    parts.push(`${Math.floor(fraction * 100)}%${p.done ? '' : ` ETA ${duration(eta)}`}`);
  }
  parts.push(`elapsed ${duration(p.elapsedMs)}`);
  return parts.join(' · ');
}

/** Feeds on UploadProgress callbacks; call `finish()` before printing anything else. */
export class ProgressPrinter {
  private last = Number.NEGATIVE_INFINITY;
  private drawn = false;
  private readonly now: () => number;

  constructor(private readonly o: ProgressPrinterOptions) {
    this.now = o.now ?? Date.now;
  }

  update = (p: UploadProgress): void => {
    const line = formatUploadProgress(p);
    if (this.o.tty) {
      const columns = process.stderr.columns ?? 120;
      this.o.write(`\r\x1b[2K${line.length > columns - 1 ? `${line.slice(0, columns - 2)}…` : line}`);
      this.drawn = true;
      return;
    }
    const t = this.now();
    if (!p.done && t - this.last < (this.o.intervalMs ?? 10_000)) return;
    this.last = t;
    this.o.write(`progress: ${line}\n`);
  };

  finish(): void {
    if (this.o.tty && this.drawn) this.o.write('\n');
    this.drawn = false;
  }
}
