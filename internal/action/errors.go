package action

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/storage/driver"
)

// ReleaseError names the release an error of Helm's storage is about; a missing release says
// where to look.
func ReleaseError(namespace, name string, err error) error {
	err = fmt.Errorf("release %s/%s: %w", namespace, name, err)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return &InputError{fmt.Errorf("%w (helm list -n %s shows the releases there)", err, namespace)}
	}
	return err
}

// InputError is a mistake in what the user asked for (no such release, chart or values file),
// not a failure of the cluster: the command line exits 1, not "could not measure".
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error.
func (e *InputError) Unwrap() error { return e.Err }
