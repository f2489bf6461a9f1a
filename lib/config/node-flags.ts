/**
 * Node's flags for every catalogue node: `npm start` and the image's CMD write them out (test/unit/node-flags.test.ts holds them
 * to this list); `npm run dev`, the tests' and the benchmark's launchers take them from here.
 *
 * `--max-semi-space-size=16`: V8's young generation in halves of 16 MB, where Node sizes them by the machine's memory (64 MB on a
 * machine of 24 GiB). A minor collection stops the event loop while it copies what survives, and a list of many games made
 * afresh survives several: smaller halves make each stop shorter, and the process keeps less memory resident
 * (docs/performance.md, "The list of 100,000 games").
 *
 * `--v8-pool-size=1`: one thread for V8's background work (concurrent marking and sweeping, parallel scavenges) where Node starts four
 * on any machine. A node is one event loop, run with a core of its own or less (a pod's CPU limit, the benchmark's pinned core): the
 * helpers of a major collection then take that core from the loop in turns of the scheduler, and the loop stops meanwhile
 * (docs/performance.md, "The list of 100,000 games").
 */
export const NODE_FLAGS: readonly string[] = ["--max-semi-space-size=16", "--v8-pool-size=1"];
