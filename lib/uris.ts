/** The URI with its password replaced by `***`, fit for logs; text that is not a URI is kept. */
export function hideCredentials(uri: string): string {
	try {
		const url = new URL(uri);
		if (url.password) url.password = "***";
		return url.href;
	} catch {
		return uri;
	}
}
