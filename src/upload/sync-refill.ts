/**
 * Re-sending what a target's snapshot holds: `sync --sandbox` starts an empty embedded sandbox
 * per command, and refills its new target with the users the snapshot says were confirmed, so a
 * second sync meets what the first left, as a real target would.
 */
import type { AdsClient } from '../api/index.js';
import type { AudienceUser } from '../identifiers/normalize.js';
import { Snapshot } from '../state/snapshot.js';
import { targetSnapshot, type Target } from './target.js';
import type { UploadReport } from './types.js';
import { sendUsers } from './upload.js';

/**
 * Sends every user of the target's snapshot to the target as `Update`; undefined when the
 * snapshot holds no user. The snapshot is only read.
 */
export async function resendSnapshot(o: {
  client: AdsClient;
  accountId: string;
  target: Target;
  stateDir: string;
}): Promise<UploadReport | undefined> {
  const found = targetSnapshot(o.stateDir, o.accountId, o.target);
  const snapshot = Snapshot.open(found.dir, { target: found.target });
  try {
    if (snapshot.count === 0) return undefined;
    const keepNone = new Uint8Array(Math.ceil(snapshot.count / 8));
    function* users(): Generator<AudienceUser> {
      for (const chunk of snapshot.usersNotIn(keepNone))
        for (const u of chunk) yield JSON.parse(u.json) as AudienceUser;
    }
    return await sendUsers({
      client: o.client,
      accountId: o.accountId,
      target: o.target,
      operationType: 'Update',
      users: users(),
    });
  } finally {
    snapshot.close();
  }
}
