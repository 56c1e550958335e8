// Package e2e holds the specs package's end-to-end tests: each starts host
// worlds (real rank processes of this test binary, the host backend) and
// runs catalogue cases through them as the suite does. They live here, not
// in specs/, because every Test in specs/ but TestSpecs is one of the
// suite binary's own Go tests, run in a child before every suite run (a
// GPU run's too) and meant to be fast checks of the suite's own code: a
// world there cost every run its time (issue 52), and the own tests' child
// refuses every rank start (specs' TestOwnTestsStartNoWorld). go test ./...
// (make test's unit check) runs these.
package e2e
