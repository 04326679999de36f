/**
 * Re-sending what a target's snapshot holds: `sync --sandbox` starts an empty embedded sandbox
 * per command, and refills its new target with the users the snapshot says were confirmed, so a
 * second sync meets what the first left, as a real target would.
 */
import type { AdsClient } from '../api/client.js';
import type { AudienceUser } from '../platform/users.js';
import { Snapshot } from '../state/snapshot.js';
import type { StateStore } from '../state/store.js';
import { snapshotTarget, type Target } from './target.js';
import type { UploadReport } from './types.js';
import { sendUsers } from './upload.js';

/**
 * Sends every user of the target's snapshot to the target as `Update`; undefined when the
 * snapshot holds no user. The snapshot is read under the target's lock and not changed in the store.
 */
export async function resendSnapshot(o: {
  client: AdsClient;
  accountId: string;
  target: Target;
  store: StateStore;
}): Promise<UploadReport | undefined> {
  const target = snapshotTarget(o.accountId, o.target);
  const session = await o.store.lockTarget(target);
  let snapshot: Snapshot | undefined;
  try {
    // What the store could not read back whole is not re-sent as if it were.
    if (session.damage !== undefined) throw session.damage;
    snapshot = Snapshot.open(session.dir, { target });
    if (snapshot.count === 0) return undefined;
    const keepNone = new Uint8Array(Math.ceil(snapshot.count / 8));
    const opened = snapshot;
    function* users(): Generator<AudienceUser> {
      for (const chunk of opened.usersNotIn(keepNone)) for (const u of chunk) yield JSON.parse(u.json) as AudienceUser;
    }
    return await sendUsers({
      client: o.client,
      accountId: o.accountId,
      target: o.target,
      operationType: 'Update',
      users: users(),
    });
  } finally {
    snapshot?.close();
    await session.release();
  }
}
