import { newId } from "../../lib/catalogue/ids";

describe("newId", () => {
	test("ids are strings that sort in creation order, even within one millisecond", () => {
		const ids = Array.from({ length: 2000 }, () => newId());
		expect(new Set(ids).size).toBe(ids.length);
		expect([...ids].sort()).toEqual(ids);
		for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
	});
});

describe("newId's randomness", () => {
	test("the 16 random characters of ids from different milliseconds use all 32 characters about evenly", async () => {
		const counts = new Map<string, number>();
		for (let i = 0; i < 400; i++) {
			for (const char of newId().slice(10)) counts.set(char, (counts.get(char) ?? 0) + 1);
			// A new millisecond: a ULID within one only increments the last one.
			await new Promise(resolve => setTimeout(resolve, 1));
		}
		expect(counts.size).toBe(32);
		const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
		for (const n of counts.values()) expect(n / total).toBeGreaterThan(1 / 64);
	});
});
