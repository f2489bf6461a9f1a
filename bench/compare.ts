import type { BenchConfig } from "./config";
import { describeError } from "./http";
import { measure, type Measurement, type RunOptions } from "./measure";
import type { Scenario } from "./scenarios";
import { seed, type Seeded } from "./seed";
import type { Target } from "./servers";
import { usageProbe } from "./usage";

// A setting's cost (the change feed, the broker's access rules): one layout started eight times, each from a fresh start on the same
// data set, with the setting off and on in turn, the same scenarios measured in each start.

/**
 * The order of a layout's starts, the mirror of itself twice over: the drift of a run (a machine warming, another process) weighs on
 * both sides alike, and the median of four starts a side sets aside one that ran far off the others.
 */
const ROUNDS = ["off", "on", "on", "off", "on", "off", "off", "on"] as const;

export type Side = (typeof ROUNDS)[number];

/** One scenario of one layout with the setting off and on: a measurement per start. */
export interface OffOnCost {
	target: Target["name"];
	scenario: string;
	off: Measurement[];
	on: Measurement[];
}

export interface Comparison {
	/** The setting, for the log: `CHANGE_FEED`, `NATS_ACCESS`. */
	setting: string;
	target: Target["name"];
	start(side: Side): Promise<Target>;
	/** The scenarios measured in every start, over what it seeded: the same names in each. */
	scenarios(seeded: Seeded): Scenario[];
	/** After the scenarios of a start, while it still runs: `first` on the first start of its side. */
	after?(target: Target, seeded: Seeded, side: Side, first: boolean): Promise<void>;
}

/** Each scenario of `comparison` in every start of ROUNDS; a start that fails is an error, and the others go on. */
export async function compareOffOn(
	comparison: Comparison,
	config: BenchConfig,
	redisUrl: string | undefined,
	options: RunOptions,
	log: (line: string) => void,
): Promise<{ costs: OffOnCost[]; errors: string[] }> {
	const costs = new Map<string, OffOnCost>();
	const errors: string[] = [];
	const { setting, target: name } = comparison;
	for (const [round, side] of ROUNDS.entries()) {
		log(`${name}, ${setting}=${side}: starting, seeding through HTTP`);
		const target = await comparison.start(side).catch((err: unknown) => {
			errors.push(`${name} with ${setting}=${side}: ${describeError(err)}`);
		});
		if (!target) continue;
		const usage = usageProbe(target, redisUrl);
		try {
			const seeded = await seed(target.base, config, config.seedConcurrency);
			for (const scenario of comparison.scenarios(seeded)) {
				const cost = costs.get(scenario.name) ?? { target: name, scenario: scenario.name, off: [], on: [] };
				costs.set(scenario.name, cost);
				const measured = await measure(target.base, scenario, { ...options, usage: () => usage.read() });
				cost[side].push(measured);
				log(
					`  ${scenario.name}: ${measured.failures ? `FAILED ${JSON.stringify(measured.failures)}` : `${Math.round(measured.rps)} rps`}`,
				);
			}
			await comparison.after?.(target, seeded, side, round === ROUNDS.indexOf(side));
		} catch (err) {
			errors.push(`${name} with ${setting}=${side}: ${describeError(err)}`);
		} finally {
			usage.close();
			await target.stop();
		}
	}
	return { costs: [...costs.values()], errors };
}
