package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// The fleet scripts are what p2pfleet merges the output of; these tests
// check what matters in them, and each check is shown to fire on a copy
// with the matching mistake planted.

const (
	jobPath      = "../../scripts/fleet/kubernetes/job.yaml"
	emptyDirPath = "../../scripts/fleet/kubernetes/job-emptydir.yaml"
	sbatchPth    = "../../scripts/fleet/slurm/p2patomics.sbatch"
)

// suiteFlags returns the flags the script gives the suite binary, without
// --out (each node names its own folder), and the --ranks and --backend
// values. --ranks is a number (Kubernetes: the GPU limit) or the Slurm
// allocation's variable; --backend must be pinned, never auto (a GPU node
// whose driver did not load would pass on the host backend). The flags
// come back with the values of those two cut, for comparing the two
// schedulers' invocations.
func suiteFlags(script string) (flags []string, ranks, backend string, err error) {
	m := regexp.MustCompile(`specs\.test((?: +--?[a-z-]+(?:=\S+)?)+)`).FindStringSubmatch(script)
	if m == nil {
		return nil, "", "", errors.New("no specs.test invocation with flags")
	}
	for _, f := range strings.Fields(m[1]) {
		if strings.HasPrefix(f, "--out=") {
			continue
		}
		if v, ok := strings.CutPrefix(f, "--ranks="); ok {
			ranks, f = v, "--ranks="
		}
		if v, ok := strings.CutPrefix(f, "--backend="); ok {
			backend, f = v, "--backend="
		}
		flags = append(flags, f)
	}
	if ranks == "" {
		return nil, "", "", errors.New("no --ranks=N: a node's GPUs are only all used when the world spans them")
	}
	if backend == "" || backend == "auto" {
		return nil, "", "", fmt.Errorf("--backend=%s: pin the pool's backend (cuda, hip, hsa), never auto: a node whose driver did not load would pass on the host backend", backend)
	}
	return flags, ranks, backend, nil
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

// checkJob returns every problem of a Kubernetes manifest text (job.yaml,
// job-emptydir.yaml): one Job per node, pinned by @NODE@.
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
	if name, _ := dig(job, "metadata", "name").(string); !strings.Contains(name, "@NODE@") {
		bad("the Job's name %q does not carry @NODE@: one Job per node needs one name per node", name)
	}
	if c := dig(spec, "completions"); c != nil && c != 1 {
		bad("completions %v: one Job per node runs one pod", c)
	}
	if dig(spec, "backoffLimit") != 0 {
		bad("backoffLimit %v, want 0: a failing suite is data, not a reason to run it again", dig(spec, "backoffLimit"))
	}
	if d, _ := dig(spec, "activeDeadlineSeconds").(int); d <= 0 {
		bad("no activeDeadlineSeconds: a pod that never gets its GPUs stays Pending forever")
	}
	pod := dig(spec, "template", "spec")
	if dig(pod, "nodeSelector", "kubernetes.io/hostname") != "@NODE@" {
		bad("not pinned to its node (nodeSelector kubernetes.io/hostname: \"@NODE@\"): the canaries could be skipped")
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
	flags, ranksV, _, err := suiteFlags(script)
	if err != nil {
		bad("command: %v", err)
	}
	ranks, _ := strconv.Atoi(ranksV)
	if !strings.Contains(script, "$(NODE_NAME)") || dig(c, "env") == nil || !strings.Contains(fmt.Sprint(dig(c, "env")), "spec.nodeName") {
		bad("the results folder is not named by the node (NODE_NAME from spec.nodeName)")
	}
	if !regexp.MustCompile(`cat "?\$out/results\.json`).MatchString(script) {
		bad("the pod does not print results.json as its stdout")
	}
	if !regexp.MustCompile(`(?m)exit \$rc\s*$`).MatchString(script) || !strings.Contains(script, `>"$out/exit_status"`) {
		bad("the pod does not exit with the suite's status and record it in exit_status")
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
	tol := false
	for _, t := range asList(dig(pod, "tolerations")) {
		if _, ok := limits[fmt.Sprint(dig(t, "key"))]; ok && dig(t, "operator") == "Exists" {
			tol = true
		}
	}
	if !tol {
		bad("no toleration for the taint of the GPU resource it asks for (nvidia.com/gpu, amd.com/gpu): on a tainted GPU pool the pod stays Pending")
	}
	if dig(c, "resources", "requests", "memory") == nil {
		bad("no memory request: the pod is BestEffort, the first evicted, and its memfd buffers count to its memory cgroup")
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
		if _, ok := dig(v, "emptyDir").(obj); ok {
			vol = true
		}
	}
	if !mounted || !vol {
		bad("results are not on a volume (/results from a PersistentVolumeClaim in the manifest, or an emptyDir)")
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
	flags, ranks, _, err := suiteFlags(text)
	if err != nil {
		bad("%v", err)
	}
	if regexp.MustCompile(`^gpu(?::[a-z0-9_]+)?:(\d+)$`).FindStringSubmatch(opts["gres"]) == nil {
		bad("no --gres=gpu:N")
	}
	// The world is the allocation: sbatch --gres=gpu:4 must run 4 ranks.
	if ranks != "$gpus" || !strings.Contains(text, "gpus=${SLURM_GPUS_ON_NODE") {
		bad("--ranks=%s is not the node's allocation ($SLURM_GPUS_ON_NODE)", ranks)
	}
	if _, ok := opts["no-requeue"]; !ok {
		bad("no --no-requeue: a node failure would requeue the job into the same results folder")
	}
	if !regexp.MustCompile(`(?m)^srun .*--ntasks-per-node=1`).MatchString(text) {
		bad("no srun with one task per node")
	}
	if !regexp.MustCompile(`(?m)^srun .*--export=NONE`).MatchString(text) {
		bad("the suite's step does not run with --export=NONE: the submitter's P2PAT_* would change every node's run")
	}
	if !strings.Contains(text, `node=${SLURMD_NODENAME`) || !strings.Contains(text, `/$node`) {
		bad("the results folder is not named by the Slurm node name (SLURMD_NODENAME)")
	}
	if !regexp.MustCompile(`(?m)^exit \$rc$`).MatchString(text) || strings.Count(text, "\nexit $rc\n") < 2 || !strings.Contains(text, `>"$out/exit_status"`) {
		bad("the suite's exit status does not reach Slurm (each task and the job: exit $rc) and exit_status")
	}
	if strings.Contains(text, "mktemp") {
		bad("the log goes to node-local /tmp, lost on TIMEOUT: write it on the shared folder")
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

// engineChecks are the engine-specific checks of a manifest (one Job per
// node, one task per node...); an engine without one still has its suite
// flags compared with every other's.
var engineChecks = map[string]func(text string) (problems, flags []string){
	"slurm":      checkSbatch,
	"kubernetes": checkJob,
}

// engineFlags returns, per manifest of every row of Engines, its problems
// and the suite flags it passes (suiteFlags' form).
func engineFlags(t *testing.T, engines []Engine) (problems []string, flags map[string][]string) {
	t.Helper()
	flags = map[string][]string{}
	for _, e := range engines {
		for _, m := range e.Manifests {
			path := filepath.Join(e.Folder, m)
			if !filepath.IsAbs(e.Folder) {
				path = filepath.Join("../../scripts/fleet", e.Folder, m)
			}
			text := readText(t, path)
			check := engineChecks[e.Name]
			if check == nil {
				check = func(text string) ([]string, []string) {
					f, _, _, err := suiteFlags(text)
					if err != nil {
						return []string{err.Error()}, nil
					}
					return nil, f
				}
			}
			ps, fs := check(text)
			for _, p := range ps {
				problems = append(problems, e.Folder+"/"+m+": "+p)
			}
			flags[e.Folder+"/"+m] = fs
		}
	}
	return problems, flags
}

// differentFlags names the manifests whose suite flags differ from the
// first's.
func differentFlags(engines []Engine, flags map[string][]string) []string {
	var first string
	var diff []string
	for _, e := range engines {
		for _, m := range e.Manifests {
			k := e.Folder + "/" + m
			if first == "" {
				first = k
			} else if strings.Join(flags[k], " ") != strings.Join(flags[first], " ") {
				diff = append(diff, fmt.Sprintf("%s runs the suite with %v, %s with %v", k, flags[k], first, flags[first]))
			}
		}
	}
	return diff
}

func TestFleetManifests(t *testing.T) {
	if len(Engines) < 2 {
		t.Fatalf("%d engines: the recipes have Slurm and Kubernetes", len(Engines))
	}
	problems, flags := engineFlags(t, Engines)
	for _, p := range problems {
		t.Error(p)
	}
	for _, d := range differentFlags(Engines, flags) {
		t.Errorf("the schedulers run the suite with different flags: %s", d)
	}
	// The emptyDir variant is the same Job but for its volume.
	job, ed := readText(t, jobPath), readText(t, emptyDirPath)
	jobDoc := job[strings.Index(job, "apiVersion: batch/v1") : strings.Index(job, "\n---\n")+1]
	jobDoc = strings.Replace(jobDoc, "        - name: results\n          persistentVolumeClaim:\n            claimName: p2patomics-results\n", "", 1)
	edDoc := ed[strings.Index(ed, "apiVersion: batch/v1"):]
	edDoc = regexp.MustCompile(`(?s)        # No claim:.*emptyDir: \{\}\n`).ReplaceAllString(edDoc, "")
	if jobDoc != edDoc {
		t.Errorf("job-emptydir.yaml's Job differs from job.yaml's in more than its volume")
	}
}

// TestFleetManifestsIterateTheRows plants an engine row (its folder a
// copy of Slurm's with one flag more) and requires TestFleetManifests'
// comparison to find it: a new engine is checked by being a row, not by
// an edit here.
func TestFleetManifestsIterateTheRows(t *testing.T) {
	dir := t.TempDir()
	sb := strings.Replace(readText(t, sbatchPth), "--ranks=$gpus", "--ranks=$gpus --perf", 1)
	if err := os.WriteFile(dir+"/run.sh", []byte(sb), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := append(slices.Clone(Engines), Engine{Name: "flux", Folder: dir, Manifests: []string{"run.sh"}})
	_, flags := engineFlags(t, planted)
	if f := flags[dir+"/run.sh"]; !slices.Contains(f, "--perf") {
		t.Errorf("a planted row's manifest was not read: its flags %q", f)
	}
	if d := differentFlags(planted, flags); len(d) != 1 || !strings.Contains(d[0], "run.sh") {
		t.Errorf("a planted row with a flag more was not reported alone: %q", d)
	}
}

// TestFleetManifestChecksFire plants each mistake in a copy and expects
// its check to name it.
func TestFleetManifestChecksFire(t *testing.T) {
	job, sb := readText(t, jobPath), readText(t, sbatchPth)
	jobCases := []struct{ old, new, want string }{
		{"kubernetes.io/hostname: \"@NODE@\"", "nvidia.com/gpu.present: \"true\"", "pinned to its node"},
		{"name: p2patomics-@NODE@", "name: p2patomics-fleet", "one name per node"},
		{"completions: 1", "completions: 4", "one pod"},
		{"backoffLimit: 0", "backoffLimit: 6", "backoffLimit"},
		{"activeDeadlineSeconds: 3600", "", "activeDeadlineSeconds"},
		{"key: nvidia.com/gpu", "key: example.com/other", "toleration"},
		{"memory: 4Gi", "ephemeral-storage: 1Gi", "memory request"},
		{"specs.test --backend=cuda", "specs.test --backend=auto", "never auto"},
		{"exit $rc", "exit 0", "exit with the suite's status"},
		{"nvidia.com/gpu: 8", "nvidia.com/gpu: 4", "asks for 4 GPUs"},
		{"privileged: false", "privileged: true", "privileged without saying why"},
		{"image: registry.example.com/p2patomics:0.1.0", "image: registry.example.com/p2patomics:latest", "pinned tag"},
		{`cat "$out/results.json"`, `true`, "stdout"},
		{"claimName: p2patomics-results", "claimName: elsewhere", "volume"},
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
		{"#SBATCH --exclusive\n", "", "exclusive"},
		{"#SBATCH --no-requeue\n", "", "no-requeue"},
		{"--ranks=$gpus", "--ranks=8", "allocation"},
		{"--backend='\"$qbackend\"'", "--backend=auto", "never auto"},
		{"node=${SLURMD_NODENAME", "node=$(hostname -s) #", "Slurm node name"},
		{"--kill-on-bad-exit=0 --export=NONE", "--kill-on-bad-exit=0", "--export=NONE"},
		{"\nexit $rc\n'", "\n'", "reach Slurm"},
		{"log='\"$qshared\"'/$node.run.log", "log=$(mktemp)", "node-local"},
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
	_, sf := checkSbatch(strings.Replace(sb, "--ranks=$gpus", "--ranks=$gpus --perf", 1))
	if bytes.Equal([]byte(strings.Join(jf, " ")), []byte(strings.Join(sf, " "))) {
		t.Error("a flag only the Slurm script passes went unnoticed")
	}
}
