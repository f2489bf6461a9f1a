import type { AuthorBody } from "../services/authors.types";

/** A game of the sample. Its category and author are named, not given by id: ids are the catalogue's. */
export interface SampleGame {
	title: string;
	/** The recommended minimum age: a whole number, 0 to 99. */
	age: number;
	/** The name of one of the sample's categories. */
	category: string;
	/** The name of one of the sample's authors. */
	author: string;
}

export interface SampleCatalogue {
	categories: string[];
	authors: AuthorBody[];
	games: SampleGame[];
}

/** Real games by their real designers, so a newcomer looking at the catalogue recognises it. */
export const sampleCatalogue: SampleCatalogue = {
	categories: ["Eurogames", "Party games", "Cooperative", "Abstract strategy", "Family"],
	authors: [
		{ name: "Reiner Knizia", nationality: "German" },
		{ name: "Uwe Rosenberg", nationality: "German" },
		{ name: "Klaus Teuber", nationality: "German" },
		{ name: "Matt Leacock", nationality: "American" },
		{ name: "Antoine Bauza", nationality: "French" },
		{ name: "Vlaada Chvátil", nationality: "Czech" },
		{ name: "Bruno Cathala", nationality: "French" },
		{ name: "Jamey Stegmaier", nationality: "American" },
	],
	games: [
		{ title: "Catan", age: 10, category: "Eurogames", author: "Klaus Teuber" },
		{ title: "Agricola", age: 12, category: "Eurogames", author: "Uwe Rosenberg" },
		{ title: "Tigris & Euphrates", age: 12, category: "Eurogames", author: "Reiner Knizia" },
		{ title: "7 Wonders", age: 10, category: "Eurogames", author: "Antoine Bauza" },
		{ title: "Scythe", age: 14, category: "Eurogames", author: "Jamey Stegmaier" },
		{ title: "Viticulture", age: 13, category: "Eurogames", author: "Jamey Stegmaier" },
		{ title: "Codenames", age: 14, category: "Party games", author: "Vlaada Chvátil" },
		{ title: "Barbarossa", age: 12, category: "Party games", author: "Klaus Teuber" },
		{ title: "Pandemic", age: 8, category: "Cooperative", author: "Matt Leacock" },
		{ title: "Forbidden Island", age: 10, category: "Cooperative", author: "Matt Leacock" },
		{ title: "Hanabi", age: 8, category: "Cooperative", author: "Antoine Bauza" },
		{ title: "Ingenious", age: 10, category: "Abstract strategy", author: "Reiner Knizia" },
		{ title: "Patchwork", age: 8, category: "Abstract strategy", author: "Uwe Rosenberg" },
		{ title: "Kingdomino", age: 8, category: "Family", author: "Bruno Cathala" },
		{ title: "Galaxy Trucker", age: 10, category: "Family", author: "Vlaada Chvátil" },
	],
};
