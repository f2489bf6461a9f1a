/** `task` of every item, `width` at a time; the results in the items' order. */
export async function inPool<T, R>(items: T[], width: number, task: (item: T) => Promise<R>): Promise<R[]> {
	const results: R[] = [];
	let next = 0;
	const worker = async () => {
		for (let i = next++; i < items.length; i = next++) results[i] = await task(items[i]);
	};
	await Promise.all(Array.from({ length: width }, worker));
	return results;
}
