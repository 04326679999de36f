/**
 * One use at a time of a sync's locking connection: a statement, or a whole transaction. Its
 * users (the snapshot's read, the write-ahead inserts, the commit, the lease's proofs, the
 * release) run on their own schedules; pg 8 queues a statement sent while another runs (with a
 * deprecation warning on stderr; pg 9 refuses it), and a proof queued between a transaction's
 * statements would run inside it (in a failed one it errs, and the lease is falsely lost). So every
 * use goes through the gate, in the order called.
 */
import type pg from 'pg';

export class SerialClient {
  private tail: Promise<unknown> = Promise.resolve();
  private transactions = 0;

  constructor(readonly client: pg.Client) {}

  /**
   * A transaction (the snapshot's read, a commit) is called and not yet ended: a use called now
   * waits behind statements that grow with the target.
   */
  get transactionPending(): boolean {
    return this.transactions > 0;
  }

  /** `work` alone on the connection, once every use called before it has ended. */
  run<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const result = this.tail.then(() => work(this.client));
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** `run`, counted as a transaction from the call until it ends. */
  transaction<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    this.transactions++;
    return this.run(work).finally(() => this.transactions--);
  }
}
