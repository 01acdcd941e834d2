module helmdrift.local/tools/helm-diff

go 1.26

require github.com/databus23/helm-diff/v3 v3.13.2
