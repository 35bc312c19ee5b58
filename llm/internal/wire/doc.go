// Package wire holds small helpers shared by the HTTP providers' wire code
// (llm/openaicompat and llm/anthropic): the pieces both do the same way.
//
// It holds the JSON string encoder and the cache of encoded request parts
// that both providers build their request bodies with; API-key redaction,
// Retry-After parsing, and the classification of a call ended by a context
// or failed below the API (closed connection, truncated or undecodable
// body, network error) into llm error kinds; the construction of the
// providers' shared HTTP client, the removal of the SDKs' X-Stainless-*
// headers, the base URL check, and the check of the settings every
// provider's Config has (Settings).
//
// It does not hold what differs in meaning from one API to another: each
// provider keeps its request and answer shapes, its APIError type, the
// mapping of its error statuses, types and codes to llm error kinds, its
// Config and defaults, and decides which request parts it caches and how
// a cached part is checked against the current one.
//
// Everything here is safe for concurrent use.
package wire
