// The library's sending calls as the suite uses them: its audiences hold a few users, so a call
// that names no minimum audience size gets 0 (the check off). The default of 100 itself is
// tested in consent.test.ts, through the library's own functions.
import {
  runUpload as runUploadOf,
  syncAudience as syncAudienceOf,
  uploadAudience as uploadAudienceOf,
  type RunUploadOptions,
  type SyncAudienceOptions,
  type SyncReport,
  type UploadAudienceOptions,
  type UploadReport,
} from '../../src/upload/index.js';

export const uploadAudience = (o: UploadAudienceOptions): Promise<UploadReport> =>
  uploadAudienceOf({ minAudienceSize: 0, ...o });

export const syncAudience = (o: SyncAudienceOptions): Promise<SyncReport> =>
  syncAudienceOf({ minAudienceSize: 0, ...o });

export const runUpload = (o: RunUploadOptions): Promise<UploadReport> => runUploadOf({ minAudienceSize: 0, ...o });
