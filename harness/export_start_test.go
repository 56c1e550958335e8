package harness

import "os/exec"

// InjectStart makes every later rank start go through f (which must start
// the command), until the returned restore is called: a black-box test
// kills or stops a rank the moment its process exists, before its hello.
func InjectStart(f func(*exec.Cmd) error) (restore func()) {
	old := startCmd
	startCmd = f
	return func() { startCmd = old }
}
