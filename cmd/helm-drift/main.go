package main
import (
 _ "helm.sh/helm/v3/pkg/postrender"
 _ "sigs.k8s.io/kustomize/kyaml/yaml"
 _ "github.com/spf13/pflag"
 _ "sigs.k8s.io/yaml"
 _ "github.com/google/go-cmp/cmp"
)
func main(){}
