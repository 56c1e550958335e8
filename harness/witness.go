package harness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"p2patomics/kernels"
	"p2patomics/wire"
)

// ErrUnwitnessed is a check kernel that cannot prove it ran over all of its
// input: its witness (kernels.WitnessArgs) is not {elements, nonce}. The case
// is an error naming the kernel, never a pass (docs/ARCHITECTURE.md, "A check
// that did not run").
var ErrUnwitnessed = errors.New("check did not run")

// nonceBase makes nonces differ between suite processes; nonceSeq between
// launches of one.
var (
	nonceBase = rand.Uint64() | 1
	nonceSeq  atomic.Uint64
)

// nextNonce is never 0 (the value zeroed witness words hold) and never
// repeats within a process.
func nextNonce() uint64 {
	n := nonceBase ^ (nonceSeq.Add(1) * 0x9E3779B97F4A7C15)
	if n == 0 {
		n = 1
	}
	return n
}

// witnessSlots is how many witnesses one rank's witness buffer holds at once.
const witnessSlots = 64

// Witness is one launch's witness: two u64 words in a rank's memory that the
// launcher zeroed, and the nonce the launch is given.
type Witness struct {
	Kernel string
	Rank   int
	Buf    int
	Off    uint64
	Nonce  uint64
}

// NewWitness zeroes a witness slot in rank r (the rank's device memory, a
// buffer the case keeps until teardown) for one launch of kernel.
func (c *Ctx) NewWitness(r int, kernel string) (Witness, error) {
	c.mu.Lock()
	if c.wit == nil {
		c.wit = map[int]*witBuf{}
	}
	wb := c.wit[r]
	c.mu.Unlock()
	if wb == nil {
		buf, err := c.ScratchWords(r, witnessSlots*16)
		if err != nil {
			return Witness{}, err
		}
		wb = &witBuf{buf: buf}
		c.mu.Lock()
		c.wit[r] = wb
		c.mu.Unlock()
	}
	slot := wb.next.Add(1) % witnessSlots
	w := Witness{Kernel: kernel, Rank: r, Buf: wb.buf, Off: slot * 16, Nonce: nextNonce()}
	if err := c.Zero(r, w.Buf, w.Off, 16); err != nil {
		return Witness{}, err
	}
	return w, nil
}

// Args sets the witness arguments of a launch.
func (w Witness) Args(args map[string]wire.Arg) map[string]wire.Arg {
	args["wit"] = P(w.Buf, w.Off)
	args["nonce"] = V(w.Nonce)
	return args
}

// Check reads witness w back from c's ranks: the launch must have visited want elements
// (unit names them in the error) and left this launch's nonce. The read is
// not verified by a device sum (readcheck.go): both words are compared in
// full with values the harness knows, so a read that altered them is
// already an error here, never a pass.
func (w Witness) Check(c *Ctx, want uint64, unit string) error {
	b, err := readRaw(c, w.Rank, w.Buf, w.Off, 16)
	if err != nil {
		return err
	}
	return w.judge(binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), want, unit)
}

func (w Witness) judge(seen, nonce, want uint64, unit string) error {
	switch {
	case seen != want:
		return fmt.Errorf("%w: %s in rank %d visited %d of %d %s", ErrUnwitnessed, w.Kernel, w.Rank, seen, want, unit)
	case nonce != w.Nonce:
		return fmt.Errorf("%w: %s in rank %d left nonce %#x, not this launch's %#x", ErrUnwitnessed, w.Kernel, w.Rank, nonce, w.Nonce)
	}
	return nil
}

// RunWitnessed is Run of one witnessed kernel launch that must visit want
// elements: it zeroes a witness in the launching rank, passes it, and checks
// it after the launch.
func (c *Ctx) RunWitnessed(l Launch, want uint64, unit string) error {
	if k, ok := kernels.Lookup(l.Kernel); !ok || !k.Witness {
		return fmt.Errorf("kernel %s carries no witness", l.Kernel)
	}
	w, err := c.NewWitness(l.Rank, l.Kernel)
	if err != nil {
		return err
	}
	l.Args = w.Args(l.Args)
	if _, err := c.Run(l); err != nil {
		return err
	}
	return w.Check(c, want, unit)
}
