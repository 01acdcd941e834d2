package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeFlags: a flag value out of range is refused before anything starts, with what to do.
func TestServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "1s"}, "--interval 1s: want at least 5s"},
		{[]string{"--auth", "basic"}, `--auth "basic": want kubernetes or none`},
		{[]string{"--auth-cache-ttl", "2h"}, "--auth-cache-ttl 2h0m0s: want 0 to 1h"},
		{[]string{"--tls-cert-file", "tls.crt"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--tls=false", "--tls-names", "svc"}, "--tls=false serves plain HTTP: drop"},
		{[]string{"--namespaces", "a,B_c"}, `--namespaces: "B_c" is not a namespace name`},
		{[]string{"--external-url", "drift.example.com"}, `--external-url "drift.example.com": want an absolute http or https URL`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := runServe(tc.args, nil, &out, &errOut)
		if code != ExitError || !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("serve %v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errOut.String(), ExitError, tc.want)
		}
	}
}
