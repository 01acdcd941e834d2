package helmcontroller

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// redact keeps a template error's location and drops what follows it where a value (a
// Secret's, perhaps) might be quoted, and bounds its length. An API server's refusal of a
// template function's request (a lookup it may not make) is kept: it names the object and the
// user, never a value.
func redact(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "error calling"); i > 0 {
		msg = msg[:i] + "error calling a template function"
		if status, ok := errors.AsType[*apierrors.StatusError](err); ok && status.ErrStatus.Message != "" {
			msg += ": " + boundedTo(status.ErrStatus.Message, 400)
		} else {
			msg += " (details withheld: they may quote values)"
		}
	}
	if i := strings.Index(msg, "values don't meet the specifications of the schema"); i > 0 {
		msg = msg[:i] + "values don't meet the specifications of the schema (details withheld: they may quote values)"
	}
	return errors.New(boundedTo(msg, 800))
}

// boundedTo cuts s to n bytes, marked.
func boundedTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
