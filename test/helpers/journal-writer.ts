/**
 * A process that settles (as far as the journal sees it) and compacts without pause, for a test
 * to kill mid-compaction: writes settlement `k<i>` from argv[3] on (its send, then its answer),
 * with every tenth a payment-identifier's answer, and prints `ok <i>` once the answer is on disk.
 * Small limits (settled entries in memory, lines between compactions) stand in for a long run.
 */
import { Journal } from "../../src/store/journal.js";
import { answerOf, entryOf, hashOf, idOf, SMALL } from "./journal-records.js";

const file = process.argv[2] as string;
let i = Number(process.argv[3] ?? 0);
const journal = new Journal(file, SMALL);
void (async () => {
  for (;;) await journal.compact();
})();
for (;;) {
  const at = i++;
  await journal.recordSend(entryOf(at), hashOf(at), "0x02f8");
  await journal.markAnswered(`k${at}`);
  if (at % 10 === 0) {
    journal.claimIdempotency(idOf(at), "fingerprint");
    await journal.finishIdempotency(idOf(at), answerOf(at));
  }
  process.stdout.write(`ok ${at}\n`);
}
