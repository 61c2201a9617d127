/** What the engines share about a failed model request: the error kind its HTTP status maps to. */

/** The shared error kind of a model endpoint's HTTP status. */
export function kindOfStatus(status: number): string {
  if (status === 429 || status >= 500) return "unavailable";
  if (status === 401 || status === 403) return "forbidden";
  if (status === 404) return "not_found";
  // Any other 4xx refuses the request itself: asking again, from this pod or a new one, gets the same.
  if (status >= 400 && status < 500) return "invalid_arguments";
  return "internal";
}
