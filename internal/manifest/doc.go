// Package manifest is the only place where a rendered manifest stream is split into documents,
// parsed and written back, and where its objects are read: their identity (group, kind,
// namespace, name, with a fast line scanner for the common case that agrees with the parser
// wherever it claims certainty), their kind's scope (a CRD in the stream, the built-in data,
// else a resolver such as the cluster) and their place for messages.
//
// It owns one promise: a document that no transform changes comes back byte-for-byte, its
// separator line, `# Source:` comment, key order, quoting, comments, trailing spaces, line
// endings and byte-order mark included. Only a document that a transform marks as changed is
// re-serialised, and then in the sequence-indent style and line endings it came in.
//
// It must never reorder, reformat, expand aliases in, or drop an untouched document, and it never
// parses a document that nobody asked to look at (a kyaml round trip of every document costs
// seconds on a large chart and rewrites thousands of lines).
package manifest
