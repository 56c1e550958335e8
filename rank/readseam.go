package rank

import (
	"strconv"

	"p2patomics/internal/inject"
	"p2patomics/rank/backend"
	"p2patomics/trace"
)

// readDevice is the rank's one device-to-host read: the read request and
// the rank-side sum (wire.TSum) both come through it, so a driver whose
// copy to the host returns wrong bytes reaches both, as it would. The
// injector's corrupt-read rule acts here, after the backend's Read said
// success: below every check of the harness, which can only notice it by
// verifying what it read (harness/readcheck.go). The trace names the rule
// and the read, so the case's evidence shows which reads were changed.
func (s *server) readDevice(b backend.Buffer, off uint64, p []byte) error {
	if err := s.be.Read(b, off, p); err != nil {
		return err
	}
	if r, hit := inject.CorruptReadIn(p); hit {
		sp := trace.Begin("inject."+r.Kind, func() string {
			return "off=" + strconv.FormatUint(off, 10) + " len=" + strconv.Itoa(len(p)) + " rule=" + r.String()
		})
		sp.End(0, "corrupted", nil)
	}
	return nil
}
