package fingerprint

// CollectAt and WithRun are collect and withRun for the external tests,
// which import report's readers as a results reader would.
var (
	CollectAt = collect
	WithRun   = withRun
)
