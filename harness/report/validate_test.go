package report_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
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
	rep := &report.Report{Schema: report.Schema, Results: []report.Result{{Case: report.ParseCase("a.b", nil), Outcome: "pass\nx", Expected: report.Pass}}}
	if rep.Validate() == nil {
		t.Error("an outcome with a newline validated")
	}
	rep = &report.Report{Schema: report.Schema, WorldEvents: []report.WorldEvent{{Time: "t", Kind: report.EventStartCrash, Detail: "d"}}}
	if err := rep.Validate(); err != nil {
		t.Errorf("a known world event kind: %v", err)
	}
	rep.WorldEvents[0].Kind = "start crash"
	if err := rep.Validate(); err == nil || !strings.Contains(err.Error(), `world_events[0]: unknown kind "start crash"`) {
		t.Errorf("an unknown world event kind: %v", err)
	}
}

// Issue 26 item 4: a record of no run is no result: Summarize calls zero
// cases NO RESULT with a non-zero exit status (at a44624c: "PASS — 0
// cases", exit 0), NoPlan says so for the no-plan stub and results: [] or
// null alike, and a no-plan record that lists cases is invalid.
func TestNoPlanIsNoResult(t *testing.T) {
	for _, rs := range [][]report.Result{nil, {}} {
		s := report.Summarize(rs, "", "o")
		if s.Verdict != report.NoResult || s.ExitStatus == 0 || !errors.Is(s.Err(), report.ErrNoPlan) || !strings.Contains(s.Line, "NO RESULT") {
			t.Errorf("%d cases: %+v", len(rs), s)
		}
		r := &report.Report{Schema: report.Schema, Results: rs}
		if !errors.Is(r.NoPlan(), report.ErrNoPlan) {
			t.Errorf("results %v: NoPlan() = nil", rs)
		}
	}
	one := []report.Result{{Case: report.ParseCase("a.b", nil), Outcome: report.Pass, Expected: report.Pass}}
	if s := report.Summarize(one, "", "o"); s.Verdict != "PASS" || s.Err() != nil {
		t.Errorf("one pass: %+v", s)
	}
	if err := (&report.Report{Schema: report.Schema, State: report.StateNoPlan, Results: one}).Validate(); err == nil {
		t.Errorf("a no-plan record listing a case validated")
	}
	if err := (&report.Report{Schema: report.Schema, State: "done\n"}).Validate(); err == nil {
		t.Errorf("an unknown state validated")
	}
	if err := (&report.Report{Schema: report.Schema, State: report.StateRunning, Results: one}).Validate(); err != nil || (&report.Report{Schema: report.Schema, Results: one}).NoPlan() != nil {
		t.Errorf("a checkpoint: %v", err)
	}
}
