// Package output prints what internal/diff measured, in every format --output names: one file
// per format (json.go holds -o json and -o yaml, the two marshallings of one schema), each
// registering itself in one registry (registry.go), so that adding a format is one file here
// and its golden test. printyaml.go and printyaml_scalar.go print an object's side for the
// line views, byte for byte as sigs.k8s.io/yaml does, noting each row's line. The table, json and yaml, markdown and counts print a
// report's rows; the line views print them the way people read a change: a unified diff of
// each object (-o diff), a pull-request comment (-o github, -o gitlab), and two directory trees
// for an external diff program (HELM_DRIFT_EXTERNAL_DIFF). Every line view is built from the
// objects' two sides as the report compared them (compare.View): it shows the report's rows
// and nothing else. No format prints a Secret's value: only its size.
package output
