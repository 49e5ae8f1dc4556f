/**
 * The rest of the way, for a request no stage before answered (a read, or a call without an
 * Idempotency-Key): reserve, run the handler, release, and answer its result, unless the handler
 * answered itself.
 */
import { runReserved } from "./reserve";
import { sendResult, settledResult, streamResult } from "./respond";
import type { RequestStage } from "./stage";

export const handle: RequestStage = {
  name: "handle",
  // a keyed call is answered by paid-write or idempotency
  takesPart: (spec) => !spec.idempotencyKey,
  errors: () => [],
  async run(state) {
    const result = settledResult(await runReserved(state));
    if (state.res.headersSent) return;
    if (result.stream) return streamResult(state.res, result);
    sendResult(state.res, result);
  },
};
