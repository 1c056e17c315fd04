// Package deploy holds the container image and Kubernetes manifests; its
// tests check them without a cluster: every manifest and the rendered
// kustomizations validate against the Kubernetes schemas (kubeconform),
// and the configuration they carry is accepted by the programs that read
// it (edgenfd's topology decoder, edgenf-cni's installer).
package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/all"
	"github.com/edgenf/edgenf/internal/topofile"
)

// kubeconformer is kubeconform in strict mode over the generated schemas.
func kubeconformer(t *testing.T) validator.Validator {
	t.Helper()
	dir := t.TempDir()
	if err := writeSchemas(dir); err != nil {
		t.Fatal(err)
	}
	v, err := validator.New([]string{filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// validate runs kubeconform on a YAML stream and reports every resource
// that is not valid; it returns the kinds it validated.
func validate(t *testing.T, v validator.Validator, name string, b []byte) []string {
	t.Helper()
	var kinds []string
	for _, r := range v.Validate(name, io.NopCloser(bytes.NewReader(b))) {
		sig, _ := r.Resource.Signature()
		switch r.Status {
		case validator.Valid:
			kinds = append(kinds, sig.Kind+"/"+sig.Name)
		case validator.Empty:
		default:
			t.Errorf("%s: %s %s: %v %v", name, sig.Kind, sig.Name, r.Err, r.ValidationErrors)
		}
	}
	return kinds
}

func render(t *testing.T, dir string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	b, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every manifest, and the base and the example rendered by kustomize,
// validate against the schemas; so does nothing that is wrong.
func TestManifestsValidate(t *testing.T) {
	v := kubeconformer(t)
	files, _ := filepath.Glob("kubernetes/*/*.yaml")
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || strings.HasPrefix(filepath.Base(f), "node-") {
			continue // kustomize's own file, and ConfigMap contents
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(validate(t, v, f, b))
	}
	if n < 3 {
		t.Fatalf("validated %d manifests", n)
	}
	for _, dir := range []string{"kubernetes/base", "kubernetes/example"} {
		kinds := validate(t, v, dir, render(t, dir))
		want := []string{"Namespace/edgenf-system", "ServiceAccount/edgenf", "DaemonSet/edgenf"}
		if dir == "kubernetes/example" {
			want = append(want, "ConfigMap/edgenf-topology")
		}
		for _, w := range want {
			found := false
			for _, k := range kinds {
				found = found || k == w
			}
			if !found {
				t.Errorf("%s: %s not rendered and valid (got %v)", dir, w, kinds)
			}
		}
	}

	// The schemas refuse what the API server would.
	ds, err := os.ReadFile("kubernetes/base/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ from, to string }{
		{"hostNetwork: true", "hostNetwrok: true"},                                   // unknown field
		{"maxUnavailable: 1", "maxUnavailable: {a: 1}"},                              // int-or-string
		{"terminationGracePeriodSeconds: 10", "terminationGracePeriodSeconds: ten"},  // type
		{"- name: edgenfd\n", "- image: x\n"},                                        // a container without a name
		{"      hostNetwork: true", "      hostNetwork: true\n      containers: {}"}, // duplicate key
		{"cpu: 100m", "cpu: [1]"},                                                    // quantity
	} {
		mutated := strings.Replace(string(ds), bad.from, bad.to, 1)
		if mutated == string(ds) {
			t.Fatalf("mutation %q not applied", bad.from)
		}
		res := v.Validate("bad.yaml", io.NopCloser(strings.NewReader(mutated)))
		if len(res) != 1 || res[0].Status == validator.Valid {
			t.Errorf("%q → %q: accepted", bad.from, bad.to)
		}
	}
}

// The example's ConfigMaps hold what their readers accept: each node's
// topology decodes into a valid document (edgenfd -apply-file), each
// node's conflist is installed by the init container's command.
func TestExampleConfiguration(t *testing.T) {
	var cms []struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(render(t, "kubernetes/example")), -1) {
		var cm struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" {
			cms = append(cms, cm)
		}
	}
	bin := filepath.Join(t.TempDir(), "edgenf-cni")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/edgenf/edgenf/cmd/edgenf-cni").CombinedOutput(); err != nil {
		t.Fatalf("build edgenf-cni: %v\n%s", err, out)
	}
	checked := 0
	for _, cm := range cms {
		for key, content := range cm.Data {
			switch {
			case strings.HasPrefix(cm.Metadata.Name, "edgenf-topology"):
				raw, err := topofile.Decode([]byte(content), ".")
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				var doc cube.Document
				if err := cube.DecodeInto("", raw, &doc); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				tp, err := doc.Topology()
				if err == nil {
					err = tp.Validate(allInterfaces{})
				}
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
			case strings.HasPrefix(cm.Metadata.Name, "edgenf-cni"):
				dir := t.TempDir()
				conf := filepath.Join(dir, key)
				os.WriteFile(conf, []byte(content), 0o644)
				binDir, netDir := filepath.Join(dir, "bin"), filepath.Join(dir, "net.d")
				os.Mkdir(binDir, 0o755)
				os.Mkdir(netDir, 0o755)
				out, err := exec.Command(bin, "install", "-bin-dir", binDir, "-conf-dir", netDir, "-conflist", conf, "-ipam-plugins", "/usr/lib/cni/host-local").CombinedOutput()
				if err != nil {
					t.Fatalf("%s: install: %v\n%s", key, err, out)
				}
				for _, f := range []string{filepath.Join(binDir, "edgenf-cni"), filepath.Join(binDir, "host-local"), filepath.Join(netDir, key)} {
					if st, err := os.Stat(f); err != nil || st.Size() == 0 {
						t.Fatalf("%s: install left no %s: %v", key, f, err)
					}
				}
				var list map[string]any
				if b, _ := os.ReadFile(filepath.Join(netDir, key)); json.Unmarshal(b, &list) != nil {
					t.Fatalf("%s: installed conflist is not JSON", key)
				}
			default:
				continue
			}
			checked++
		}
	}
	if checked != 4 {
		t.Fatalf("checked %d ConfigMap entries, want 4 (two nodes' topologies and conflists)", checked)
	}

	// The installer refuses a conflist without edgenf-cni, or a bad one,
	// and installs nothing.
	dir := t.TempDir()
	for i, bad := range []string{
		`{"cniVersion": "1.1.0", "name": "x", "plugins": [{"type": "bridge"}]}`,
		`{"cniVersion": "1.1.0", "name": "x", "plugins": [{"type": "edgenf-cni", "tenats": {}}]}`,
		`{"cniVersion": "1.1.0", "name": "x", "type": "edgenf-cni", "cube": "c"}`,
	} {
		conf := filepath.Join(dir, "bad.conflist")
		os.WriteFile(conf, []byte(bad), 0o644)
		out, err := exec.Command(bin, "install", "-bin-dir", dir, "-conf-dir", dir, "-conflist", conf).CombinedOutput()
		if err == nil {
			t.Errorf("bad conflist %d installed: %s", i, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "edgenf-cni")); err == nil {
			t.Errorf("bad conflist %d: the plugin was installed", i)
		}
	}
}

// allInterfaces answers that every interface exists (the example's are on
// its nodes, not here).
type allInterfaces struct{}

func (allInterfaces) IfaceExists(string) bool { return true }

// The image is built from the same make build: the binaries it copies are
// commands of this repository.
func TestDockerfileCopiesBuiltBinaries(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	bins := regexp.MustCompile(`/src/bin/([a-z-]+)`).FindAllStringSubmatch(string(b), -1)
	if len(bins) < 3 {
		t.Fatalf("the Dockerfile copies %d binaries", len(bins))
	}
	for _, m := range bins {
		if _, err := os.Stat(filepath.Join("..", "cmd", m[1])); err != nil {
			t.Errorf("the Dockerfile copies bin/%s, which make build does not produce", m[1])
		}
	}
	if !strings.Contains(string(b), "make -o setup build") {
		t.Error("the build stage does not run make build")
	}
}
