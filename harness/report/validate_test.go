package report_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"p2patomics/harness/report"
)

// Validate's lists are the schema's: an outcome or verdict added to one
// and not the other fails here.
func TestValidateMatchesSchema(t *testing.T) {
	b, err := os.ReadFile(schemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.Defs["outcome"].Enum), fmt.Sprint(report.Outcomes); got != want {
		t.Errorf("schema outcomes %s, report.Outcomes %s", got, want)
	}
	if got, want := fmt.Sprint(s.Defs["verdict"].Enum), fmt.Sprint(report.Verdicts); got != want {
		t.Errorf("schema verdicts %s, report.Verdicts %s", got, want)
	}
	rep := &report.Report{Schema: report.Schema, Results: []report.Result{{ID: "a.b", Outcome: "pass\nx", Expected: report.Pass}}}
	if rep.Validate() == nil {
		t.Error("an outcome with a newline validated")
	}
}
