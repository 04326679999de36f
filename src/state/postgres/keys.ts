/** Advisory lock keys: 64-bit values from SHA-256 of a namespace and a name, so no other application's keys collide by accident. */
import { createHash } from 'node:crypto';

const NAMESPACE = 'audience-kit advisory lock v1';

/** The signed 64-bit key (as a decimal string, how `pg` passes a bigint) for `name` ('schema', 'audit', `target:<name>`). */
export function advisoryKey(name: string): string {
  return createHash('sha256').update(`${NAMESPACE}\0${name}`).digest().readBigInt64BE(0).toString();
}
