/**
 * A lease: the right to act for a target (a sync's lock on it) that can be lost at any time, and
 * is proven rather than assumed. The platform cannot check a fencing token, so what keeps a
 * process that lost its lock from sending is time and checks: every HTTP attempt is preceded by a
 * proof (`verify()`), no wait lasts longer than `proofIntervalMs` without one, and a heartbeat
 * proves it every `proofIntervalMs` and aborts `signal` (ending a request in flight) when it fails.
 * The state stores make one per locked target (state/store.ts); the client (api/client.ts) takes
 * one per request.
 */

export interface Lease {
  /** Aborted, with the error to report as its reason, once the lease is known to be lost. */
  readonly signal: AbortSignal;
  /** Resolves when the lease is proven held now; rejects with the error (and aborts `signal`) otherwise. */
  verify(): Promise<void>;
  /** The longest any wait lasts before the lease is proven again. */
  readonly proofIntervalMs: number;
  /**
   * The longest from the lease's loss to its signal's abort: a heartbeat period and a proof that
   * never answers (a half-open connection).
   */
  readonly abortWithinMs: number;
}

/** A proof that takes longer than this many proof intervals fails (a connection that no longer answers). */
const PROOF_TIMEOUT_INTERVALS = 3;

/** The default interval between two proofs of a lease (the heartbeat's period, and the longest unchecked wait). */
export const DEFAULT_PROOF_INTERVAL_MS = 10_000;

export interface HeldLeaseOptions {
  /** Resolves when the lease holds; rejects (or takes longer than `proofIntervalMs`) when it does not. */
  prove: () => Promise<void>;
  /** The error reported once it is lost, from the proof's failure. */
  lost: (cause: unknown) => Error;
  proofIntervalMs?: number;
  /** Called once when the lease is found lost (the store drops the connection it held it on). */
  onLost?: () => void;
}

/** A lease proven by `prove`, with a heartbeat (unref'd timer) from `start()` until `stop()`. */
export class HeldLease implements Lease {
  readonly proofIntervalMs: number;
  readonly abortWithinMs: number;
  private readonly proofTimeoutMs: number;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: HeldLeaseOptions) {
    this.proofIntervalMs = o.proofIntervalMs ?? DEFAULT_PROOF_INTERVAL_MS;
    // A proof queues behind the connection's other statements (a write-ahead insert of MBs): it is
    // given more time than the interval. A slow proof only delays a send, never allows one.
    this.proofTimeoutMs = this.proofIntervalMs * PROOF_TIMEOUT_INTERVALS;
    this.abortWithinMs = this.proofIntervalMs + this.proofTimeoutMs;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async verify(): Promise<void> {
    this.signal.throwIfAborted();
    let timer: NodeJS.Timeout | undefined;
    // A proof that does not answer in time (a half-open connection) fails like one that errs.
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${this.proofTimeoutMs} ms`)), this.proofTimeoutMs);
    });
    try {
      await Promise.race([this.o.prove(), late]);
    } catch (cause) {
      this.fail(cause);
      this.signal.throwIfAborted();
    } finally {
      clearTimeout(timer);
    }
  }

  /** Mark the lease lost (idempotent): `signal` aborts with the store's error. */
  fail(cause: unknown): void {
    if (this.signal.aborted || this.stopped) return;
    this.controller.abort(this.o.lost(cause));
    this.o.onLost?.();
  }

  /** Prove the lease every `proofIntervalMs` until `stop()` (its release) or its loss. */
  start(): void {
    if (this.stopped || this.signal.aborted) return;
    this.timer = setTimeout(() => {
      void this.verify().then(
        () => this.start(),
        () => undefined,
      );
    }, this.proofIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
