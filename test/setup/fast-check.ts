/**
 * Property tests: seeded and repeatable. FC_SEED replays a failing run (the
 * seed is printed in every fast-check failure); FC_NUM_RUNS sets the number of
 * runs; a mutation run (MUTATION_RUN=1) uses fewer runs per mutant.
 */
import fc from "fast-check";

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const numRuns = process.env.FC_NUM_RUNS ? Number(process.env.FC_NUM_RUNS) : process.env.MUTATION_RUN ? 40 : undefined;
fc.configureGlobal({ ...(seed !== undefined ? { seed } : {}), ...(numRuns !== undefined ? { numRuns } : {}) });
