import { TRANSFER_BATCH, type StoredRecord } from "./format";

/** A call of a service's action, as `broker.call` makes it. */
export type Caller = <T>(action: string, params: object) => Promise<T>;

/** Those of the records `ids` names that `service` holds now, asked of its `exportPage` a batch of ids at a time. */
export async function recordsWithIds(call: Caller, service: string, ids: string[]): Promise<StoredRecord[]> {
	const found: StoredRecord[] = [];
	for (let from = 0; from < ids.length; from += TRANSFER_BATCH)
		found.push(...(await call<StoredRecord[]>(`${service}.exportPage`, { ids: ids.slice(from, from + TRANSFER_BATCH) })));
	return found;
}
