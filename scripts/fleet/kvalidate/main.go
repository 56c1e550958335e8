// Command kvalidate runs Kubernetes manifests through the API server's own
// create path, as a library: decoding and defaulting by the API server's
// scheme, then rest.BeforeCreate with the real registry strategies of a
// Job and a PersistentVolumeClaim (PrepareForCreate, which generates a
// Job's selector and labels, then Validate and the object-meta checks).
// That is what `kubectl apply --dry-run=server` runs, minus admission
// plugins and etcd. No cluster is needed (docs/FLEET.md).
//
//	kvalidate FILE...   exit 0 when every object is valid, 1 with one line
//	                    per field error, 2 for an unreadable file
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	jobstore "k8s.io/kubernetes/pkg/registry/batch/job"
	pvcstore "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kvalidate FILE...")
		os.Exit(2)
	}
	bad := 0
	for _, p := range os.Args[1:] {
		n, err := check(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kvalidate: %s: %v\n", p, err)
			os.Exit(2)
		}
		bad += n
	}
	if bad > 0 {
		os.Exit(1)
	}
}

func check(path string) (int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(fh))
	ctx := genericapirequest.WithNamespace(context.Background(), "default")
	bad := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		if err != nil {
			return bad, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			return bad, err
		}
		obj, gvk, err := legacyscheme.Codecs.UniversalDecoder().Decode(js, nil, nil)
		if err != nil {
			fmt.Printf("%s: decode: %v\n", path, err)
			bad++
			continue
		}
		var strategy rest.RESTCreateStrategy
		switch obj.(type) {
		case *batch.Job:
			strategy = jobstore.Strategy
		case *core.PersistentVolumeClaim:
			strategy = pvcstore.Strategy
		default:
			fmt.Printf("%s: %s: no create strategy wired here\n", path, gvk.Kind)
			bad++
			continue
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return bad, err
		}
		rest.FillObjectMetaSystemFields(m)
		if err := rest.BeforeCreate(strategy, ctx, obj); err != nil {
			fmt.Printf("%s: %s %s: %v\n", path, gvk.Kind, m.GetName(), err)
			bad++
			continue
		}
		fmt.Printf("%s: %s %s: valid\n", path, gvk.Kind, m.GetName())
	}
}
