// The library's sending calls as the suite uses them: its audiences hold a few users, so a call
// that names no minimum audience size gets 0 (the check off). The default of 100 itself is
// tested in consent.test.ts, through the library's own functions.
import { runUpload as runUploadOf, type RunUploadOptions } from '../../src/upload/run.js';
import { syncAudience as syncAudienceOf, type SyncAudienceOptions } from '../../src/upload/sync.js';
import { uploadAudience as uploadAudienceOf } from '../../src/upload/upload.js';
import type { SyncReport } from '../../src/upload/sync-report.js';
import type { UploadAudienceOptions, UploadReport } from '../../src/upload/types.js';

export const uploadAudience = (o: UploadAudienceOptions): Promise<UploadReport> =>
  uploadAudienceOf({ minAudienceSize: 0, ...o });

export const syncAudience = (o: SyncAudienceOptions): Promise<SyncReport> =>
  syncAudienceOf({ minAudienceSize: 0, ...o });

export const runUpload = (o: RunUploadOptions): Promise<UploadReport> => runUploadOf({ minAudienceSize: 0, ...o });
