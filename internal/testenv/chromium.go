package testenv

import (
	"os"
	"os/exec"
)

// Chromium is the headless Chromium the browser tests and benchmarks drive:
// $HELM_DRIFT_CHROMIUM, else Debian's chromium-headless-shell (.ci/run installs it), else
// Debian's chromium; "" when there is none.
func Chromium() string {
	for _, p := range []string{os.Getenv("HELM_DRIFT_CHROMIUM"), "/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// ChromiumFlags are the command-line flags Chromium needs on these machines beside headless:
// no sandbox (the tests run as root), no GPU, and none of its own network traffic (refused
// here, many connections at a time).
var ChromiumFlags = map[string]any{
	"no-sandbox": true, "disable-gpu": true, "disable-background-networking": true,
	"disable-component-update": true, "disable-sync": true, "disable-quic": true,
}
