package report_test

// Validates results.json against schema/results.schema.json with a small
// validator for the subset of JSON Schema 2020-12 that the schema uses
// (type, const, enum, pattern, minimum, required, properties,
// additionalProperties, items, local $ref into $defs). A keyword outside
// that subset fails the test, so the schema can never silently outgrow the
// validator. Also checks that the schema and report.go's structs name the
// same fields, and validates the file named by $P2PAT_RESULTS (make test
// points it at the suite's real output).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

func schemaPath(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "schema", "results.schema.json")
}

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(schemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %v", s["$schema"])
	}
	return s
}

// validator is a JSON Schema subset validator.
type validator struct {
	root map[string]any
	errs []string
}

var known = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "title": true, "description": true,
	"type": true, "const": true, "enum": true, "pattern": true, "minimum": true,
	"required": true, "properties": true, "additionalProperties": true, "items": true, "$ref": true,
}

func (v *validator) fail(path, f string, a ...any) {
	if path == "" {
		path = "/"
	}
	v.errs = append(v.errs, path+": "+fmt.Sprintf(f, a...))
}

func typeOf(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

func equalJSON(a, b any) bool {
	if na, ok := a.(json.Number); ok {
		fb, ok := b.(float64)
		fa, _ := na.Float64()
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// validate checks x against schema s at path: the keywords of a value
// (validateValue), then an object's (validateObject) or an array's items.
func (v *validator) validate(path string, x any, s map[string]any) {
	for k := range s {
		if !known[k] {
			v.fail(path, "schema keyword %q is outside the validator's subset", k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := v.root["$defs"].(map[string]any)
		def, _ := defs[name].(map[string]any)
		if !found || def == nil {
			v.fail(path, "unresolvable $ref %q", ref)
			return
		}
		v.validate(path, x, def)
	}
	if !v.validateValue(path, x, s) {
		return
	}
	if obj, ok := x.(map[string]any); ok {
		v.validateObject(path, obj, s)
	}
	if arr, ok := x.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				v.validate(fmt.Sprintf("%s/%d", path, i), e, items)
			}
		}
	}
}

// validateValue checks type, const, enum, pattern and minimum; false when
// the type is wrong (nothing more to check).
func (v *validator) validateValue(path string, x any, s map[string]any) bool {
	if t, ok := s["type"]; ok {
		var want []string
		switch t := t.(type) {
		case string:
			want = []string{t}
		case []any:
			for _, e := range t {
				want = append(want, e.(string))
			}
		}
		got := typeOf(x)
		if !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number")) {
			v.fail(path, "type %s, want %s", got, strings.Join(want, " or "))
			return false
		}
	}
	if c, ok := s["const"]; ok && !equalJSON(x, c) {
		v.fail(path, "%v, want const %v", x, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(w any) bool { return equalJSON(x, w) }) {
		v.fail(path, "%#v not in enum %v", x, e)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := x.(string); ok && !regexp.MustCompile(p).MatchString(str) {
			v.fail(path, "%q does not match %s", str, p)
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if n, ok := x.(json.Number); ok {
			if f, _ := n.Float64(); f < m {
				v.fail(path, "%v < minimum %v", f, m)
			}
		}
	}
	return true
}

// validateObject checks required keys, then each key against its
// property's schema or additionalProperties, in sorted order.
func (v *validator) validateObject(path string, obj map[string]any, s map[string]any) {
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				v.fail(path, "missing required %q", r)
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := props[k].(map[string]any); ok {
			v.validate(path+"/"+k, obj[k], ps)
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				v.fail(path, "unexpected property %q", k)
			}
		case map[string]any:
			v.validate(path+"/"+k, obj[k], ap)
		}
	}
}

// validateJSON returns the schema violations of a results.json document.
func validateJSON(t *testing.T, schema map[string]any, doc []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	v := &validator{root: schema}
	v.validate("", x, schema)
	return v.errs
}

func goodReport() *report.Report {
	zero, one := 0, 1
	twelve := 12.0
	r := &report.Report{
		Schema:      report.Schema,
		Environment: report.Environment{Vendor: backends.HostName, GOARCH: "amd64", GPUs: []report.GPU{{Info: device.Info{Name: "cpu"}}}},
		Results: []report.Result{
			{
				Case: report.ParseCase("host.memfd.counter.add_u64_relaxed_sys", nil), Labels: []string{backends.HostName, "memfd"},
				Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected, Detail: "13500000 adds summed exactly",
				Duration: 0.0123,
				Ranks:    []report.Rank{{Rank: 0, Pid: 100, Device: 0, ExitCode: nil, GoDump: false}, {Rank: 1, Pid: 101, Device: 0, ExitCode: &zero}},
				Metrics:  map[string]report.Metric{"bw_copy_gbps": {Unit: "GB/s", Median: 12.5, Min: 12, Max: 13, N: 5, Method: "wall", Better: report.Higher, Samples: []float64{12.5, 13, 12, 12.5, 12.6}}},
				Repro:    "./specs.test --backend=host --case=host.memfd.counter.add_u64_relaxed_sys",
			},
			{
				Case: report.ParseCase("cuda.vmm.canary.no_access", nil), Labels: nil, Outcome: report.Crash, Expected: report.Crash,
				Detail:    "rank 1: CUDA_ERROR_ILLEGAL_ADDRESS",
				Fault:     &report.Fault{Vendor: "nvidia", Kind: "gpu", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"},
				Ranks:     []report.Rank{{Rank: 1, Pid: 102, Device: 1, ExitCode: &one, Signal: "SIGABRT", GoDump: true, StderrTail: "..."}},
				KernelLog: []string{"NVRM: Xid 31"},
			},
			{Case: report.ParseCase("host.memfd.gone", nil), Labels: []string{}, Outcome: report.Skip, Expected: report.Pass, Verdict: report.Missing, Ranks: []report.Rank{}},
		},
		Gate: &report.Gate{Pass: false, Reasons: []string{"missing: host.memfd.gone ran in the baseline but not now"}},
		Matrices: []report.PairMatrix{{Name: "host.memfd.perf.copy_ce_read", Metric: "bw_ce_read_gbps", Unit: "GB/s",
			Direction: "GPU(row) <- GPU(column)", Description: "bw_ce_read_gbps (GB/s), data moves GPU(row) <- GPU(column)",
			Matrix: [][]*float64{{nil, &twelve}, {&twelve, nil}}, Sum: 24, Min: 12, Max: 12, Average: 12}},
		WorldEvents: []report.WorldEvent{{Time: "2026-12-01T10:00:00Z", Kind: report.EventStartCrash, Backend: backends.HostName, Ranks: 2,
			Rank: &one, Pid: 4242, Signal: "SIGSEGV", Case: "host.memfd.counter.add_u64_relaxed_sys",
			Detail: "rank 1 (pid 4242) killed by SIGSEGV before its hello", StderrTail: "SIGSEGV: segmentation violation"}},
	}
	s := report.Summarize(r.Results, "expectations/host-amd64", "out")
	r.Summary = &s
	return r
}

func TestSchemaAcceptsReport(t *testing.T) {
	schema := loadSchema(t)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := goodReport().Write(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if errs := validateJSON(t, schema, b); len(errs) > 0 {
		t.Fatalf("valid report rejected:\n%s", strings.Join(errs, "\n"))
	}
	// A minimal report (no gate, no verdicts) too.
	b, _ = json.Marshal(&report.Report{Schema: 1, Environment: report.Environment{}, Results: []report.Result{}})
	if errs := validateJSON(t, schema, b); len(errs) > 0 {
		t.Fatalf("minimal report rejected: %v", errs)
	}
}

func TestSchemaRejectsPlanted(t *testing.T) {
	schema := loadSchema(t)
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"outcome passed", func(m map[string]any) { res(m)["outcome"] = "passed" }, `/results/0/outcome: "passed" not in enum`},
		{"expected unknown", func(m map[string]any) { res(m)["expected"] = "PASS" }, `/results/0/expected: "PASS" not in enum`},
		{"verdict unknown", func(m map[string]any) { res(m)["verdict"] = "ok" }, `/results/0/verdict: "ok" not in enum`},
		{"id with slash", func(m map[string]any) { res(m)["id"] = "Host/memfd" }, `/results/0/id: "Host/memfd" does not match`},
		{"missing detail", func(m map[string]any) { delete(res(m), "detail") }, `/results/0: missing required "detail"`},
		{"extra field", func(m map[string]any) { res(m)["status"] = "pass" }, `/results/0: unexpected property "status"`},
		{"exit code string", func(m map[string]any) { rank(m)["exit_code"] = "0" }, `/results/0/ranks/1/exit_code: type string, want integer or null`},
		{"negative duration", func(m map[string]any) { res(m)["duration_s"] = -1 }, `/results/0/duration_s: -1 < minimum 0`},
		{"metric n fraction", func(m map[string]any) { metric(m)["n"] = 2.5 }, `/results/0/metrics/bw_copy_gbps/n: type number, want integer`},
		{"better unknown", func(m map[string]any) { metric(m)["better"] = "up" }, `/results/0/metrics/bw_copy_gbps/better: "up" not in enum`},
		{"metric without unit", func(m map[string]any) { delete(metric(m), "unit") }, `missing required "unit"`},
		{"schema 2", func(m map[string]any) { m["schema"] = 2 }, `/schema: 2, want const 1`},
		{"fault code string", func(m map[string]any) {
			m["results"].([]any)[1].(map[string]any)["fault"].(map[string]any)["code"] = "700"
		}, `/results/1/fault/code: type string`},
		{"gate without reasons", func(m map[string]any) { delete(m["gate"].(map[string]any), "reasons") }, `/gate: missing required "reasons"`},
		{"environment array", func(m map[string]any) { m["environment"] = []any{} }, `/environment: type array, want object`},
		{"sample string", func(m map[string]any) { metric(m)["samples"] = []any{12.5, "13"} }, `/results/0/metrics/bw_copy_gbps/samples/1: type string, want number`},
		{"matrix cell string", func(m map[string]any) {
			m["matrices"].([]any)[0].(map[string]any)["matrix"].([]any)[0].([]any)[1] = "12"
		}, `/matrices/0/matrix/0/1: type string`},
		{"matrix without direction", func(m map[string]any) { delete(m["matrices"].([]any)[0].(map[string]any), "direction") }, `/matrices/0: missing required "direction"`},
		{"world event kind unknown", func(m map[string]any) { event(m)["kind"] = "crash" }, `/world_events/0/kind: "crash" not in enum`},
		{"world event rank string", func(m map[string]any) { event(m)["rank"] = "1" }, `/world_events/0/rank: type string, want integer`},
		{"world event without detail", func(m map[string]any) { delete(event(m), "detail") }, `/world_events/0: missing required "detail"`},
		{"summary verdict ok", func(m map[string]any) { m["summary"].(map[string]any)["verdict"] = "OK" }, `/summary/verdict: "OK" not in enum`},
		{"summary exit 7", func(m map[string]any) { m["summary"].(map[string]any)["exit_status"] = 7 }, `/summary/exit_status: "7" not in enum`},
		{"summary without line", func(m map[string]any) { delete(m["summary"].(map[string]any), "line") }, `/summary: missing required "line"`},
		{"unexpected without was", func(m map[string]any) {
			delete(m["summary"].(map[string]any)["unexpected"].([]any)[0].(map[string]any), "was")
		}, `/summary/unexpected/0: missing required "was"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := json.Marshal(goodReport())
			var m map[string]any
			json.Unmarshal(b, &m)
			c.edit(m)
			b, _ = json.Marshal(m)
			errs := validateJSON(t, schema, b)
			if len(errs) == 0 {
				t.Fatalf("planted bad report accepted")
			}
			if !strings.Contains(strings.Join(errs, "\n"), c.want) {
				t.Fatalf("errors %q lack %q", errs, c.want)
			}
		})
	}
}

func event(m map[string]any) map[string]any {
	return m["world_events"].([]any)[0].(map[string]any)
}
func res(m map[string]any) map[string]any { return m["results"].([]any)[0].(map[string]any) }
func rank(m map[string]any) map[string]any {
	return res(m)["ranks"].([]any)[1].(map[string]any)
}
func metric(m map[string]any) map[string]any {
	return res(m)["metrics"].(map[string]any)["bw_copy_gbps"].(map[string]any)
}

// TestSchemaMatchesModel keeps the schema and report.go in step: the same
// field names per object, required = the fields without omitempty, and the
// same outcome and verdict names.
func TestSchemaMatchesModel(t *testing.T) {
	schema := loadSchema(t)
	defs := schema["$defs"].(map[string]any)
	objs := map[string]struct {
		typ reflect.Type
		s   map[string]any
	}{
		"report":  {reflect.TypeFor[report.Report](), schema},
		"result":  {reflect.TypeFor[report.Result](), defs["result"].(map[string]any)},
		"fault":   {reflect.TypeFor[report.Fault](), defs["fault"].(map[string]any)},
		"attempt": {reflect.TypeFor[report.Attempt](), defs["attempt"].(map[string]any)},
		"rank":    {reflect.TypeFor[report.Rank](), defs["rank"].(map[string]any)},
		"metric":  {reflect.TypeFor[report.Metric](), defs["metric"].(map[string]any)},
		"gate":    {reflect.TypeFor[report.Gate](), defs["gate"].(map[string]any)},
		"summary": {reflect.TypeFor[report.Summary](), defs["summary"].(map[string]any)},
		"unexpected": {reflect.TypeFor[report.UnexpectedCase](),
			defs["summary"].(map[string]any)["properties"].(map[string]any)["unexpected"].(map[string]any)["items"].(map[string]any)},
		"not_supported": {reflect.TypeFor[report.NotSupportedRef](),
			defs["summary"].(map[string]any)["properties"].(map[string]any)["not_supported"].(map[string]any)["items"].(map[string]any)},
		"matrix":      {reflect.TypeFor[report.PairMatrix](), defs["matrix"].(map[string]any)},
		"world_event": {reflect.TypeFor[report.WorldEvent](), defs["world_event"].(map[string]any)},
		"ab":          {reflect.TypeFor[report.AB](), defs["ab"].(map[string]any)},
		"ab_stack":    {reflect.TypeFor[report.ABStack](), defs["ab_stack"].(map[string]any)},
		"ab_pair":     {reflect.TypeFor[report.ABPair](), defs["ab_pair"].(map[string]any)},
		"ab_side":     {reflect.TypeFor[report.ABSide](), defs["ab_side"].(map[string]any)},
		"ab_metric":   {reflect.TypeFor[report.ABMetric](), defs["ab_metric"].(map[string]any)},
	}
	for name, o := range objs {
		fields, required := jsonFields(o.typ)
		props := slices.Sorted(maps.Keys(o.s["properties"].(map[string]any)))
		var req []string
		for _, r := range o.s["required"].([]any) {
			req = append(req, r.(string))
		}
		sort.Strings(req)
		if !slices.Equal(fields, props) {
			t.Errorf("%s: report.go fields %v, schema properties %v", name, fields, props)
		}
		if !slices.Equal(required, req) {
			t.Errorf("%s: report.go non-omitempty %v, schema required %v", name, required, req)
		}
		if o.s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties must be false", name)
		}
	}
	var outcomes []string
	for _, o := range report.Outcomes {
		outcomes = append(outcomes, string(o))
	}
	checkEnum(t, "outcome", defs, outcomes)
	var vs []string
	for _, v := range report.Verdicts {
		vs = append(vs, string(v))
	}
	checkEnum(t, "verdict", defs, vs)
	kinds := defs["world_event"].(map[string]any)["properties"].(map[string]any)
	defs["world_event_kind"] = kinds["kind"]
	checkEnum(t, "world_event_kind", defs, report.WorldEventKinds)
}

// jsonFields are the names a type's JSON has, sorted, and those of them
// without omitempty. A Result's id is not a field: MarshalJSON derives it
// from the embedded Case (json:"-"), always, so it is required; the
// encoder is asked, so a Result that stopped writing it fails here.
func jsonFields(typ reflect.Type) (fields, required []string) {
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("json")
		n, opts, _ := strings.Cut(tag, ",")
		if n == "-" || n == "" {
			continue
		}
		fields = append(fields, n)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, n)
		}
	}
	if typ == reflect.TypeFor[report.Result]() {
		var m map[string]any
		b, _ := json.Marshal(report.Result{Case: report.ParseCase("host.memfd.x.y", nil)})
		if json.Unmarshal(b, &m) == nil && m["id"] == "host.memfd.x.y" {
			fields, required = append(fields, "id"), append(required, "id")
		}
	}
	sort.Strings(fields)
	sort.Strings(required)
	return fields, required
}

// checkEnum compares a schema enum with the model's values, in order.
func checkEnum(t *testing.T, def string, defs map[string]any, want []string) {
	t.Helper()
	var enum []string
	for _, e := range defs[def].(map[string]any)["enum"].([]any) {
		enum = append(enum, e.(string))
	}
	if !slices.Equal(want, enum) {
		t.Errorf("%s enum %v, model %v", def, enum, want)
	}
}

// TestSchemaResultsFile validates the suite's real output when
// P2PAT_RESULTS names it (make test sets it after running the suite).
func TestSchemaResultsFile(t *testing.T) {
	path := os.Getenv("P2PAT_RESULTS")
	if path == "" {
		t.Skip("P2PAT_RESULTS not set")
	}
	schema := loadSchema(t)
	for _, p := range strings.Split(path, string(os.PathListSeparator)) {
		b, err := report.ReadRaw(p) // a committed run's results.json.gz too
		if err != nil {
			t.Fatalf("P2PAT_RESULTS: %v", err)
		}
		if errs := validateJSON(t, schema, b); len(errs) > 0 {
			t.Errorf("%s does not match %s:\n%s", p, schemaPath(t), strings.Join(errs, "\n"))
		}
		if _, err := report.Read(p); err != nil {
			t.Errorf("report.Read: %v", err)
		}
	}
}
