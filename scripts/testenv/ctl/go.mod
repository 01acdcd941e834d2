module helm-drift.testenv/ctl

go 1.26
