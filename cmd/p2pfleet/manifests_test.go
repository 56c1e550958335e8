package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// The fleet scripts are what p2pfleet merges the output of; these tests
// check what matters in them, and each check is shown to fire on a copy
// with the matching mistake planted.

const (
	jobPath   = "../../scripts/fleet/kubernetes/job.yaml"
	sbatchPth = "../../scripts/fleet/slurm/p2patomics.sbatch"
)

// suiteFlags returns the flags the script gives the suite binary, without
// --out (each node names its own folder), and the --ranks value.
func suiteFlags(script string) ([]string, int, error) {
	m := regexp.MustCompile(`specs\.test((?: +--?[a-z-]+(?:=\S+)?)+)`).FindStringSubmatch(script)
	if m == nil {
		return nil, 0, errors.New("no specs.test invocation with flags")
	}
	var flags []string
	ranks := 0
	for _, f := range strings.Fields(m[1]) {
		if strings.HasPrefix(f, "--out=") {
			continue
		}
		flags = append(flags, f)
		if v, ok := strings.CutPrefix(f, "--ranks="); ok {
			ranks, _ = strconv.Atoi(v)
		}
	}
	if ranks == 0 {
		return nil, 0, errors.New("no --ranks=N: a node's GPUs are only all used when the world spans them")
	}
	return flags, ranks, nil
}

type obj = map[string]any

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// checkJob returns every problem of the Kubernetes manifest text.
func checkJob(text string) (problems []string, flags []string) {
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	dec := yaml.NewDecoder(strings.NewReader(text))
	var job obj
	claims := map[string]bool{}
	for {
		var doc obj
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			bad("YAML: %v", err)
			return problems, nil
		}
		switch doc["kind"] {
		case "Job":
			job = doc
		case "PersistentVolumeClaim":
			claims[fmt.Sprint(dig(doc, "metadata", "name"))] = true
		}
	}
	if job == nil {
		bad("no Job")
		return problems, nil
	}
	spec := dig(job, "spec")
	if dig(spec, "completionMode") != "Indexed" {
		bad("completionMode is %v, want Indexed", dig(spec, "completionMode"))
	}
	if c, p := dig(spec, "completions"), dig(spec, "parallelism"); c == nil || c != p {
		bad("completions %v and parallelism %v differ: every node's pod must run at once", c, p)
	}
	pod := dig(spec, "template", "spec")
	labels, _ := dig(spec, "template", "metadata", "labels").(obj)
	terms, _ := dig(pod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution").([]any)
	anti := false
	for _, t := range terms {
		if dig(t, "topologyKey") != "kubernetes.io/hostname" {
			continue
		}
		sel, _ := dig(t, "labelSelector", "matchLabels").(obj)
		match := len(sel) > 0
		for k, v := range sel {
			if labels[k] != v {
				match = false
			}
		}
		anti = anti || match
	}
	if !anti {
		bad("no required pod anti-affinity on kubernetes.io/hostname selecting the job's own pods: two pods could share a node")
	}
	cs, _ := dig(pod, "containers").([]any)
	if len(cs) != 1 {
		bad("want one container, got %d", len(cs))
		return problems, nil
	}
	c := cs[0]
	img, _ := dig(c, "image").(string)
	if img == "" || !strings.Contains(img, ":") || strings.HasSuffix(img, ":latest") {
		bad("image %q: want a pinned tag, so every node runs the same binary", img)
	}
	var cmd []string
	for _, a := range append(asList(dig(c, "command")), asList(dig(c, "args"))...) {
		cmd = append(cmd, fmt.Sprint(a))
	}
	script := strings.Join(cmd, " ")
	flags, ranks, err := suiteFlags(script)
	if err != nil {
		bad("command: %v", err)
	}
	if !strings.Contains(script, "$(NODE_NAME)") || dig(c, "env") == nil || !strings.Contains(fmt.Sprint(dig(c, "env")), "spec.nodeName") {
		bad("the results folder is not named by the node (NODE_NAME from spec.nodeName)")
	}
	if !regexp.MustCompile(`cat "?\$out/results\.json`).MatchString(script) {
		bad("the pod does not print results.json as its stdout")
	}
	limits, _ := dig(c, "resources", "limits").(obj)
	gpus := 0
	for _, k := range []string{"nvidia.com/gpu", "amd.com/gpu"} {
		if v, ok := limits[k]; ok {
			gpus, _ = strconv.Atoi(fmt.Sprint(v))
		}
	}
	if gpus == 0 {
		bad("no GPU limit through the device plugin (nvidia.com/gpu or amd.com/gpu)")
	} else if ranks != 0 && gpus != ranks {
		bad("the pod asks for %d GPUs but runs --ranks=%d", gpus, ranks)
	}
	if dig(c, "securityContext", "privileged") == true && !strings.Contains(text, "privileged: true  # kernel log:") {
		bad("privileged without saying why (only the kernel log would need it: `privileged: true  # kernel log: ...`)")
	}
	mounted := false
	for _, m := range asList(dig(c, "volumeMounts")) {
		if dig(m, "mountPath") == "/results" {
			mounted = true
		}
	}
	vol := false
	for _, v := range asList(dig(pod, "volumes")) {
		if cl, _ := dig(v, "persistentVolumeClaim", "claimName").(string); cl != "" && claims[cl] {
			vol = true
		}
	}
	if !mounted || !vol {
		bad("results are not on a volume (/results from a PersistentVolumeClaim in the manifest)")
	}
	return problems, flags
}

func asList(v any) []any { l, _ := v.([]any); return l }

// checkSbatch returns every problem of the Slurm script text.
func checkSbatch(text string) (problems []string, flags []string) {
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	opts := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^#SBATCH --([a-z-]+)(?:=(\S+))?`).FindAllStringSubmatch(text, -1) {
		opts[m[1]] = m[2]
	}
	if opts["ntasks-per-node"] != "1" {
		bad("ntasks-per-node is %q, want 1 (one suite per node)", opts["ntasks-per-node"])
	}
	if _, ok := opts["exclusive"]; !ok {
		bad("no --exclusive: another job's kernels would share the GPUs under test")
	}
	flags, ranks, err := suiteFlags(text)
	if err != nil {
		bad("%v", err)
	}
	g := regexp.MustCompile(`^gpu(?::[a-z0-9_]+)?:(\d+)$`).FindStringSubmatch(opts["gres"])
	if g == nil {
		bad("no --gres=gpu:N")
	} else if n, _ := strconv.Atoi(g[1]); ranks != 0 && n != ranks {
		bad("the job asks for %d GPUs per node but runs --ranks=%d", n, ranks)
	}
	if !regexp.MustCompile(`(?m)^srun .*--ntasks-per-node=1`).MatchString(text) {
		bad("no srun with one task per node")
	}
	if !strings.Contains(text, `/$(hostname -s)`) {
		bad("the results folder is not named by the host")
	}
	return problems, flags
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFleetManifests(t *testing.T) {
	job, sb := readText(t, jobPath), readText(t, sbatchPth)
	jp, jf := checkJob(job)
	sp, sf := checkSbatch(sb)
	for _, p := range jp {
		t.Errorf("kubernetes/job.yaml: %s", p)
	}
	for _, p := range sp {
		t.Errorf("slurm/p2patomics.sbatch: %s", p)
	}
	if strings.Join(jf, " ") != strings.Join(sf, " ") {
		t.Errorf("the two schedulers run the suite with different flags: kubernetes %v, slurm %v", jf, sf)
	}
}

// TestFleetManifestChecksFire plants each mistake in a copy and expects
// its check to name it.
func TestFleetManifestChecksFire(t *testing.T) {
	job, sb := readText(t, jobPath), readText(t, sbatchPth)
	jobCases := []struct{ old, new, want string }{
		{"completionMode: Indexed", "completionMode: NonIndexed", "Indexed"},
		{"topologyKey: kubernetes.io/hostname", "topologyKey: topology.kubernetes.io/zone", "anti-affinity"},
		{"nvidia.com/gpu: 8", "nvidia.com/gpu: 4", "asks for 4 GPUs"},
		{"privileged: false", "privileged: true", "privileged without saying why"},
		{"image: registry.example.com/p2patomics:0.1.0", "image: registry.example.com/p2patomics:latest", "pinned tag"},
		{`cat "$out/results.json"`, `true`, "stdout"},
		{"claimName: p2patomics-results", "claimName: elsewhere", "volume"},
		{"parallelism: 4", "parallelism: 2", "at once"},
	}
	for _, c := range jobCases {
		if !strings.Contains(job, c.old) {
			t.Fatalf("job.yaml no longer holds %q: update the planted case", c.old)
		}
		ps, _ := checkJob(strings.Replace(job, c.old, c.new, 1))
		if !strings.Contains(strings.Join(ps, "\n"), c.want) {
			t.Errorf("planted %q → %q: problems %q, want one naming %q", c.old, c.new, ps, c.want)
		}
	}
	if ps, _ := checkJob(strings.Replace(job, "privileged: false", "privileged: true  # kernel log: Xid lines from /dev/kmsg", 1)); len(ps) != 0 {
		t.Errorf("privileged with the kernel log as its reason refused: %q", ps)
	}
	sbCases := []struct{ old, new, want string }{
		{"#SBATCH --ntasks-per-node=1", "#SBATCH --ntasks-per-node=8", "one suite per node"},
		{"#SBATCH --gres=gpu:8", "#SBATCH --gres=gpu:2", "asks for 2 GPUs"},
		{"#SBATCH --exclusive\n", "", "exclusive"},
		{"/$(hostname -s)", "/node", "named by the host"},
	}
	for _, c := range sbCases {
		if !strings.Contains(sb, c.old) {
			t.Fatalf("p2patomics.sbatch no longer holds %q: update the planted case", c.old)
		}
		ps, _ := checkSbatch(strings.Replace(sb, c.old, c.new, 1))
		if !strings.Contains(strings.Join(ps, "\n"), c.want) {
			t.Errorf("planted %q → %q: problems %q, want one naming %q", c.old, c.new, ps, c.want)
		}
	}
	_, jf := checkJob(job)
	_, sf := checkSbatch(strings.Replace(sb, "--backend=auto --ranks=8", "--backend=auto --ranks=8 --perf", 1))
	if bytes.Equal([]byte(strings.Join(jf, " ")), []byte(strings.Join(sf, " "))) {
		t.Error("a flag only the Slurm script passes went unnoticed")
	}
}
