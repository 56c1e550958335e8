package specs

import (
	"bytes"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
)

// fdPatternBytes is the pattern fdexchange.pattern writes into each
// owner's allocation and reads back through every rank's mapping: 256 KiB
// spans 4 of a GPU's 64 KiB pages and 64 of the host's 4 KiB pages, so a
// page mapped wrong past the first still shows. At 1 MiB the pattern's
// trips over the wire were the case (0.22-0.26 s on one H100, 0.19 s on
// the host; 256 KiB: 0.06-0.09 s on the host; issue 52).
const fdPatternBytes = 256 << 10

func (b *builder) fdExchange() {
	b.add(Spec{Name: "fdexchange", Variant: "pattern", Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{LabelFD}, Timeout: 30 * time.Second,
		Run: func(c *harness.Ctx) error {
			if err := c.NeedPeer(false); err != nil {
				return err
			}
			const size = fdPatternBytes
			for owner := 0; owner < c.N(); owner++ {
				m, err := c.Shared(owner, size, true)
				if err != nil {
					return err
				}
				pat := make([]byte, size)
				for i := range pat {
					pat[i] = byte(i*31 + owner*7 + int(c.Seed))
				}
				if err := c.Write(owner, m.Bufs[owner], 0, pat); err != nil {
					return err
				}
				for r := 0; r < c.N(); r++ {
					got, err := c.Read(r, m.Bufs[r], 0, size)
					if err != nil {
						return err
					}
					if i := firstDiff(got, pat); i >= 0 {
						return harness.Failf("rank %d reads byte %d of rank %d's buffer as %#x, owner wrote %#x", r, i, owner, got[i], pat[i])
					}
				}
				// And the other way: the last peer writes, the owner reads.
				peer := (owner + 1) % c.N()
				if err := c.Write(peer, m.Bufs[peer], 4096, []byte("p2patomics")); err != nil {
					return err
				}
				back, err := c.Read(owner, m.Bufs[owner], 4096, 10)
				if err != nil {
					return err
				}
				if string(back) != "p2patomics" {
					return harness.Failf("rank %d wrote through its import; owner %d reads %q", peer, owner, back)
				}
			}
			return nil
		}})
	b.add(Spec{Name: "lifetime", Variant: "owner_frees", Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{LabelFD}, Timeout: 30 * time.Second,
		Run: func(c *harness.Ctx) error {
			m, err := c.Shared(0, 1<<20, true)
			if err != nil {
				return err
			}
			const want = 0xfeedface
			if err := c.PutU64(0, m.Bufs[0], 0, want); err != nil {
				return err
			}
			if err := c.FreeBuf(0, m.Bufs[0]); err != nil {
				return err
			}
			v, err := c.U64(1, m.Bufs[1], 0)
			if err != nil {
				if !harness.RankRefused(err) {
					// A timeout, a death or a protocol error is not "the
					// read failed": only the rank's own error reply is.
					return err
				}
				// A refused read is an allowed answer: the driver may
				// end the import with the owner's free.
				c.Note("after the owner freed its buffer, the peer's read was refused: %v", err)
				return nil
			}
			// A read that succeeds reads the memory the owner wrote,
			// which the import still holds: anything else (0 after a
			// write that never landed, another allocation's bytes) is
			// the driver handing out freed or wrong memory.
			if v != want {
				return harness.Failf("after the owner freed its buffer the peer reads %#x through its import, not the %#x the owner wrote", v, uint64(want))
			}
			c.Note("after the owner freed its buffer, the peer still reads %#x through its import (the import holds a reference)", v)
			return nil
		}})
	lt := b.add(Spec{Name: "lifetime", Variant: "owner_dies", Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{LabelFD}, Timeout: 30 * time.Second,
		Run: func(c *harness.Ctx) error {
			m, err := c.Shared(0, 1<<20, true)
			if err != nil {
				return err
			}
			if err := c.PutU64(0, m.Bufs[0], 0, 0xdecafbad); err != nil {
				return err
			}
			p := c.W.Procs[0]
			p.Sacrifice()
			if !p.WaitExit(5 * time.Second) {
				return harness.Failf("rank 0 survived SIGKILL")
			}
			v, err := c.U64(1, m.Bufs[1], 0)
			if err != nil {
				if !harness.RankRefused(err) {
					// A timeout, a death or a protocol error is not "the
					// read failed": only the rank's own error reply is.
					return err
				}
				c.Note("after the owner died, the peer's read failed: %v", err)
				return nil
			}
			if v != 0xdecafbad {
				return harness.Failf("after the owner died the peer reads %#x, not the %#x written", v, uint64(0xdecafbad))
			}
			c.Note("after the owner was killed, the peer still reads %#x through its import", v)
			return nil
		}})
	lt.NoLeak = true
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

func (b *builder) dmabuf() {
	b.add(Spec{Name: "fdexchange", Variant: "fdinfo", Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{LabelFD}, Timeout: 30 * time.Second,
		Run: func(c *harness.Ctx) error {
			const size = 2 << 20
			own, peers, err := c.ShareFd(0, c.Kind, size) // the export-only kind (cuda dmabuf)
			if err != nil {
				return err
			}
			name := own["exp_name"]
			if name == "" {
				return harness.Failf("the exported fd shows no exp_name in fdinfo (%v): not a dma-buf", own)
			}
			for r, info := range peers {
				if info["exp_name"] != name || info["size"] != own["size"] || info["ino"] != own["ino"] {
					return harness.Failf("rank %d holds exp_name=%q size=%q ino=%q, exporter has exp_name=%q size=%q ino=%q",
						r, info["exp_name"], info["size"], info["ino"], name, own["size"], own["ino"])
				}
			}
			c.Note("dma-buf exp_name=%s size=%s seen identically by %d ranks", name, own["size"], len(peers))
			return nil
		}})
}
