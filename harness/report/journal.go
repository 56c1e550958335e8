package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The journal (issue 52): while a run is running its results.json is
// written once, with the plan (state "running", every case incomplete),
// and each change after that is one line appended to the journal beside
// it: JournalPath(results.json). Rewriting the whole record after every
// case cost 5-13 ms a case as it grew (O(n²) over a run); a line costs
// what one result costs. The final record replaces results.json whole and
// the journal is removed then (compacted). A parent killed meanwhile
// (SIGKILL included: the appended lines are in the kernel's page cache)
// leaves a results.json and a journal that Read puts together, so every
// tool reads a killed run as it stood after its last finished case.

// JournalEntry is one line of the journal: a result that replaces the
// record's result of the same id (or is added), the environment and the
// world events as they now stand. Absent parts are unchanged.
type JournalEntry struct {
	Result      *Result       `json:"result,omitempty"`
	Environment *Environment  `json:"environment,omitempty"`
	WorldEvents *[]WorldEvent `json:"world_events,omitempty"`
}

// JournalPath is the journal of the results.json at path:
// results.journal beside results.json.
func JournalPath(path string) string {
	return strings.TrimSuffix(path, ".json") + ".journal"
}

// ApplyJournal applies a journal's lines to a running record, in order. A
// last line without its newline is a write the run did not finish (it was
// killed or its disk filled mid-line) and is left out; any other line that
// does not read is an error naming it.
func ApplyJournal(r *Report, journal []byte) error {
	at := map[string]int{}
	for i := range r.Results {
		at[r.Results[i].ID()] = i
	}
	for n := 1; len(journal) > 0; n++ {
		nl := bytes.IndexByte(journal, '\n')
		if nl < 0 {
			return nil // a torn last line
		}
		line := journal[:nl]
		journal = journal[nl+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("journal line %d: %w", n, err)
		}
		if e.Environment != nil {
			r.Environment = *e.Environment
		}
		if e.WorldEvents != nil {
			r.WorldEvents = *e.WorldEvents
		}
		if e.Result != nil {
			id := e.Result.ID()
			if i, ok := at[id]; ok {
				r.Results[i] = *e.Result
			} else {
				at[id] = len(r.Results)
				r.Results = append(r.Results, *e.Result)
			}
		}
	}
	return nil
}
