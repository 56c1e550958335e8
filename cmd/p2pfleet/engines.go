package main

import (
	"fmt"
	"strings"
)

// Engine is one scheduler the fleet recipes run under: one row each, so a
// new engine (Flux, PBS…) is its folder under scripts/fleet/, its row here
// and its check script (docs/ARCHITECTURE.md, "How to add … a fleet
// engine"). TestFleetManifests compares every row's manifests' suite flags
// and --drain=<name> prints the row's drain line.
type Engine struct {
	// Name is the engine's --drain value.
	Name string
	// Folder is the engine's folder under scripts/fleet/.
	Folder string
	// Manifests are the files in Folder that run the suite binary; every
	// engine must pass it the same flags.
	Manifests []string
	// Drain is the command that takes a node out of service, a
	// fmt.Sprintf template of the node name (a name of [A-Za-z0-9._-]
	// only, shell-quoted by report.ShellQuote: WriteDrain refuses any
	// other) and the reason (quotes, `\`, `$`, backquotes and control
	// characters already taken out; at most 160 bytes) for a double-quoted
	// argument.
	Drain string
}

// Engines are the fleet's schedulers; the first is what a bare --drain
// means (Slurm, as before there were rows).
var Engines = []Engine{
	{Name: "slurm", Folder: "slurm", Manifests: []string{"p2patomics.sbatch"},
		Drain: "scontrol update nodename=%[1]s state=drain reason=\"p2patomics: %[2]s\""},
	{Name: "kubernetes", Folder: "kubernetes", Manifests: []string{"job.yaml", "job-emptydir.yaml"},
		Drain: "kubectl cordon %[1]s && kubectl annotate --overwrite node %[1]s p2patomics/reason=\"p2patomics: %[2]s\""},
}

// engineNames lists the rows' names, for usage and errors.
func engineNames() string {
	var ns []string
	for _, e := range Engines {
		ns = append(ns, e.Name)
	}
	return strings.Join(ns, ", ")
}

// drainFlag is --drain: bare, the first row's engine; --drain=<name>, that
// row's; off unless given.
type drainFlag struct{ engine *Engine }

func (d *drainFlag) IsBoolFlag() bool { return true }

func (d *drainFlag) String() string {
	if d == nil || d.engine == nil {
		return ""
	}
	return d.engine.Name
}

func (d *drainFlag) Set(v string) error {
	switch v {
	case "false":
		d.engine = nil
		return nil
	case "true":
		d.engine = &Engines[0]
		return nil
	}
	for i := range Engines {
		if Engines[i].Name == v {
			d.engine = &Engines[i]
			return nil
		}
	}
	return fmt.Errorf("unknown engine %q (one of %s)", v, engineNames())
}
