/**
 * The target kinds: one declaration each in platform/kinds/ (its rules, its CLI flag, its
 * endpoints as request specs), listed here. Everything that tells the kinds apart above this
 * folder reads this list: the `UploadTarget` type, `describeTarget`, the CLI's target flags. A
 * new kind is a declaration in platform/kinds/ and its entry here (docs/design.md, "One `Target`").
 */
import { CUSTOM_AUDIENCE } from './kinds/custom-audience.js';
import { DO_NOT_REACH_LIST } from './kinds/do-not-reach-list.js';

/** Every kind; the first is the one the CLI's sandbox makes when no target flag is given. */
export const TARGET_KINDS = [CUSTOM_AUDIENCE, DO_NOT_REACH_LIST] as const;

/** One kind's declaration, its literal names kept. */
export type TargetKindDeclared = (typeof TARGET_KINDS)[number];
export type TargetKind = TargetKindDeclared['kind'];
export type TargetIdOption = TargetKindDeclared['idOption'];
export type TargetFlagName = TargetKindDeclared['flag']['name'];

type NamedBy<D> = D extends { readonly idOption: infer O extends string } ? { [P in O]: string } : never;
/** An upload target as a caller names it: one shape per kind, its id under the kind's option. */
export type UploadTarget = NamedBy<TargetKindDeclared>;
