/**
 * A target kind the platform does not have, declared as src/platform/kinds/*.ts declare theirs
 * (target-kinds.test.ts adds it to the registry): email only, one count per request, no minimum
 * size, its own CLI flag.
 */
import { declareKind } from '../../src/platform/kinds/kind.js';
import { accountPath, pathSegment } from '../../src/platform/request.js';
import { dataEnvelope, userBatchResultSchema } from '../../src/platform/responses.js';

const fakeListPath = (accountId: string, id: string) => `${accountPath(accountId)}/fake_lists/${pathSegment(id, 'id')}`;

export const FAKE_LIST = declareKind({
  kind: 'fake_list',
  idOption: 'fakeListId',
  name: 'fake list',
  noun: 'fake',
  command: 'fakes',
  types: ['email'],
  takesEffectiveAt: false,
  maxExpiry: () => undefined,
  filtersConsent: true,
  hasMinimumSize: false,
  flag: { name: 'fake-list', describe: 'Fake list id (a test kind)' },
  endpoints: {
    postUsers: (accountId: string, id: string, body: Buffer) => ({
      method: 'POST',
      path: `${fakeListPath(accountId, id)}/users`,
      json: body,
      schema: dataEnvelope(userBatchResultSchema).transform((r) => r.data),
    }),
    readBack: (accountId: string, id: string) => ({
      method: 'GET',
      path: fakeListPath(accountId, id),
      schema: dataEnvelope(userBatchResultSchema).transform(() => 'writable' as const),
    }),
    create: (accountId: string, name: string) => ({
      method: 'POST',
      path: `${accountPath(accountId)}/fake_lists`,
      query: { name },
      idempotent: false,
      schema: dataEnvelope(userBatchResultSchema).transform(() => 'new-fake'),
    }),
  },
});
