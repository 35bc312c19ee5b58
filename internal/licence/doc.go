// Package licence holds the test that keeps the repository's licence policy
// true: the root LICENSE is the Apache License 2.0 word for word, source
// files carry no licence headers of their own, and every third-party data set
// under testdata/external keeps its own LICENSE. It holds no code.
package licence
