// Package docs holds helm-drift's documentation, in Markdown; its test keeps the links of these
// pages and of the README pointing at files and headings that exist.
package docs
