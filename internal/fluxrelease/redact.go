package fluxrelease

import (
	"errors"
	"strings"
)

// redact keeps a template error's location and drops what follows it where a value (a
// Secret's, perhaps) might be quoted, and bounds its length.
func redact(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "error calling"); i > 0 {
		msg = msg[:i] + "error calling a template function (details withheld: they may quote values)"
	}
	if i := strings.Index(msg, "values don't meet the specifications of the schema"); i > 0 {
		msg = msg[:i] + "values don't meet the specifications of the schema (details withheld: they may quote values)"
	}
	if len(msg) > 400 {
		msg = msg[:400] + "..."
	}
	return errors.New(msg)
}
