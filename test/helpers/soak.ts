/**
 * The long soaks (issue 39): `npm test` runs them smaller or leaves them out, so that the whole
 * command stays within minutes; `npm run test:soak` (FACILITATOR_TEST_SOAK=1) runs every test at
 * the size its issue names, and CI (.ci/run) runs that.
 */
export const SOAK = process.env.FACILITATOR_TEST_SOAK === "1";

/** `full` in a soak run, `quick` in `npm test`. */
export const soakSize = (full: number, quick: number): number => (SOAK ? full : quick);
