package harness

import (
	"encoding/binary"
	"fmt"

	"p2patomics/harness/backends"
	"p2patomics/wire"
)

// Every read of a result is verified (docs/SYNC.md, "Reads and what they
// are compared with"). A driver whose device-to-host copy hands back wrong
// bytes and says success would otherwise be judged on those bytes: a
// flipped bit in a litmus round's slot moves it to another legal outcome,
// and nothing the case checks can tell (issue 37 item 1).
//
// So each Ctx.Read is checked by a second path that does not copy the same
// bytes to the host: the reading rank's device adds up the words it read
// (sum_u64_relaxed_dev, on the device, through the same buffer id, so
// through the same mapping the read used) and the harness compares that
// sum with the sum of the bytes it received. The device's sum itself comes
// back through the read path, so a corrupting read path reaches it too;
// three things keep it from agreeing with a corrupted read by accident:
//
//   - it lands in a frame of frameWords words whose other words the harness
//     wrote with random values just before (frameGuard first, the witness,
//     then the rest); the frame is read back whole, in one read, and a
//     known word read back altered fails the case, naming the word (a
//     write that did not land, or a read that altered it: from here the
//     two cannot be told apart);
//   - the word the sum lands in is one of the frame's words chosen at random
//     per check, and starts at a random salt that the harness subtracts: a
//     read path that alters fixed positions of a reply hits a known word
//     (the first-byte flip of corrupt-read:0-7 always does), and one that
//     alters bits by value sees values it cannot predict;
//   - the launch carries a witness (words visited and a nonce), so a sum
//     that did not run (its salt read back, the kernel dropped) is an error,
//     never a match.
//
// What it does not catch: a read path that alters the data's bytes and the
// sum's word by the same amount (a corruption that knows the frame), and
// changes to the data that leave its 64-bit wrapping sum unchanged (two
// compensating changes: a sum, not a hash).

// frameWords is the size of one rank's check frame in words: frameGuard,
// the witness (two words), and frameWords-3 words one of which takes the sum.
const (
	frameWords = 8
	frameGuard = 0 // a known word at the reply's start
	frameWit   = 1 // the witness: words 1 (visited) and 2 (nonce)
	frameFirst = 3 // the first word the sum may land in
	sumKernel  = "sum_u64_relaxed_dev"
)

// readFrame is one rank's check frame, a buffer of the rank's device memory
// kept until teardown; mu makes concurrent checks on one rank take turns.

// Read reads n bytes from a rank's buffer and verifies them: it reads the
// 8-byte words that cover them and compares their sum with the sum the
// rank's device makes of the same words (verifyRead). A mismatch is the
// case's fail, "read-back integrity: ...".
func (c *Ctx) Read(r, buf int, off, n uint64) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	lo, hi := off&^7, (off+n+7)&^7
	b, err := readRaw(c, r, buf, lo, hi-lo)
	if err != nil {
		return nil, err
	}
	if err := c.reads.verify(c, r, buf, lo, b); err != nil {
		return nil, err
	}
	return b[off-lo : off-lo+n], nil
}

// verifyRead compares the bytes b read from [off, off+len(b)) of rank r's
// buffer (whole words) with the device's sum of the same words.
func (rc *readCheck) verify(c *Ctx, r, buf int, off uint64, b []byte) error {
	words := uint64(len(b)) / 8
	dev, err := rc.deviceWordSum(c, r, buf, off, words)
	if err != nil {
		return checkFailed(r, buf, off, words, err)
	}
	if got := wordSum(b); got != dev {
		return Failf("read-back integrity: rank %d's read of buffer %d [%d, +%d bytes): device sum %#x, bytes read sum %#x",
			r, buf, off, len(b), dev, got)
	}
	return nil
}

// wordSum is the wrapping sum of b's little-endian 64-bit words.
func wordSum(b []byte) uint64 {
	var s uint64
	for i := 0; i+8 <= len(b); i += 8 {
		s += binary.LittleEndian.Uint64(b[i:])
	}
	return s
}

// deviceWordSum is the wrapping sum of words 64-bit words of rank r's
// buffer from off, added up by rank r's device into its check frame, which
// is read back and checked word by word (see the package comment above).
func (rc *readCheck) deviceWordSum(c *Ctx, r, buf int, off, words uint64) (uint64, error) {
	f, err := rc.frame(c, r)
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	known := make([]uint64, frameWords)
	frame := make([]byte, frameWords*8)
	for i := range known {
		if i != frameWit && i != frameWit+1 {
			known[i] = nextNonce()
		}
		binary.LittleEndian.PutUint64(frame[i*8:], known[i])
	}
	slot := frameFirst + int(nextNonce()%(frameWords-frameFirst))
	if err := c.Write(r, f.buf, 0, frame); err != nil {
		return 0, err
	}
	w := Witness{Kernel: sumKernel, Rank: r, Buf: f.buf, Off: frameWit * 8, Nonce: nextNonce()}
	grid, block := sumShape(c.W, r, words)
	l := Launch{Rank: r, Kernel: sumKernel, Grid: grid, Block: block, Args: w.Args(map[string]wire.Arg{
		"src": P(buf, off), "out": P(f.buf, uint64(slot)*8), "n": V(words), "block": V(uint64(block)),
		"nthreads": V(uint64(grid) * uint64(block))})}
	if _, err := c.Run(l); err != nil {
		return 0, err
	}
	back, err := readRaw(c, r, f.buf, 0, frameWords*8)
	if err != nil {
		return 0, err
	}
	for i, k := range known {
		if got := binary.LittleEndian.Uint64(back[i*8:]); i != slot && i != frameWit && i != frameWit+1 && got != k {
			return 0, Failf("read-back integrity: rank %d's check frame word %d reads %#x, the harness wrote %#x (a write that did not land or a read that altered it)",
				r, i, got, k)
		}
	}
	if err := w.judge(binary.LittleEndian.Uint64(back[frameWit*8:]), binary.LittleEndian.Uint64(back[(frameWit+1)*8:]), words, "words"); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(back[slot*8:]) - known[slot], nil
}

// sumShape is the check's launch shape: up to 256 threads a block; on a
// GPU up to 4 blocks per unit, on the host one block (a goroutine a thread).
func sumShape(w *World, r int, words uint64) (grid, block uint32) {
	block = uint32(max(min(words, 256), 1))
	if !backends.IsGPU(w.Backend) {
		return 1, block
	}
	return uint32(max(min((words+255)/256, uint64(4*w.Units(r))), 1)), block
}

// frame is rank r's check frame, locked: the caller unlocks it.
func (rc *readCheck) frame(c *Ctx, r int) (*readFrame, error) {
	rc.mu.Lock()
	if rc.frames == nil {
		rc.frames = map[int]*readFrame{}
	}
	f := rc.frames[r]
	if f == nil {
		f = &readFrame{buf: -1}
		rc.frames[r] = f
	}
	rc.mu.Unlock()
	f.mu.Lock()
	if f.buf < 0 {
		buf, err := c.ScratchWords(r, frameWords*8)
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		f.buf = buf
	}
	return f, nil
}

// checkFailed words an error of the check itself. A rank's refusal (the
// sum's launch refused after the read succeeded) becomes an

// U64 reads one little-endian word.
func (c *Ctx) U64(r, buf int, off uint64) (uint64, error) {
	b, err := c.Read(r, buf, off, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// Sum adds n words of width bits in a rank: the rank reads them back and
// adds them up (wire.TSum), and the rank's device adds up the same words
// (readcheck.go); the two must agree, as a Read's bytes must. Only 64-bit
// words have a device sum to compare with, so only they are summed.
func (c *Ctx) Sum(r, buf int, off, n uint64, width int) (uint64, error) {
	if width != 64 {
		return 0, fmt.Errorf("sum of %d-bit words: only 64-bit sums can be verified (%s)", width, sumKernel)
	}
	var s wire.SumReply
	if _, err := c.W.Procs[r].call(wire.TSum, wire.Sum{Buf: buf, Off: off, N: n, Width: width}, c.Deadline, &s); err != nil {
		return 0, err
	}
	dev, err := c.reads.deviceWordSum(c, r, buf, off, n)
	if err != nil {
		return 0, checkFailed(r, buf, off, n, err)
	}
	if dev != s.Sum {
		return 0, Failf("read-back integrity: rank %d's sum of buffer %d [%d, +%d words): device sum %#x, the rank's read-back sum %#x",
			r, buf, off, n, dev, s.Sum)
	}
	return s.Sum, nil
}
