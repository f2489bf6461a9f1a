/** The Dockerfile as stages of [instruction, arguments], continuation lines joined. */
export function dockerfileStages(source: string): [string, string][][] {
	const instructions = source
		.replace(/\\\n/g, " ")
		.split("\n")
		.map(line => line.trim())
		.filter(line => line && !line.startsWith("#"))
		.map((line): [string, string] => {
			const [keyword, ...rest] = line.split(/\s+/);
			return [keyword.toUpperCase(), rest.join(" ")];
		});
	const stages: [string, string][][] = [];
	for (const instruction of instructions) {
		if (instruction[0] === "FROM") stages.push([]);
		stages.at(-1)?.push(instruction);
	}
	return stages;
}
