package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Ring geometry. The layout is little-endian and versioned by the magic, so
// a parent and a rank built from the same commit always agree.
const (
	Slots              = 4096                        // records kept
	SlotSize           = 512                         // bytes per record
	SharedSize         = headerSize + Slots*SlotSize // bytes of a shared ring (2 MiB + 64)
	headerSize         = 64                          // magic[8] slots u32 slotSize u32 pad[8] lastSeq u64 pid u32 pad[4] wedged u64
	magic              = "P2PTRC01"                  //
	nameMax            = 48                          // bytes kept of Name
	codeMax            = 40                          // bytes kept of CodeName
	argsMax            = SlotSize - offArgs          // bytes kept of Args (384)
	offSeq             = 0                           // u64
	offStart           = 8                           // i64 unix ns
	offDur             = 16                          // i64 ns
	offCode            = 24                          // i64
	offFlags           = 32                          // u8
	offNameLen         = 33                          // u8
	offCodeLen         = 34                          // u8
	offArgsLen         = 36                          // u16
	offName            = 40                          // [nameMax]
	offCode2           = offName + nameMax           // [codeMax]
	offArgs            = offCode2 + codeMax          // [argsMax]
	hdrLastSeq         = 24                          // u64
	hdrPid             = 32                          // u32
	hdrWedged          = 40                          // u64: the watchdog's record (Wedge), 0 for none
	flagInFlight uint8 = 1
	flagErr      uint8 = 2
)

var le = binary.LittleEndian

func initHeader(mem []byte) {
	copy(mem[0:8], magic)
	le.PutUint32(mem[8:], Slots)
	le.PutUint32(mem[12:], SlotSize)
	le.PutUint32(mem[hdrPid:], uint32(os.Getpid()))
}

func putSeq(mem []byte, seq uint64) { le.PutUint64(mem[hdrLastSeq:], seq) }

func slotOf(mem []byte, seq uint64) []byte {
	i := headerSize + int((seq-1)%Slots)*SlotSize
	return mem[i : i+SlotSize : i+SlotSize]
}

func slotSeq(slot []byte) uint64 { return le.Uint64(slot[offSeq:]) }

// putStr copies s into dst (truncated, marked with "~" when cut) and
// returns the stored length.
func putStr(dst []byte, s string) int {
	if len(s) <= len(dst) {
		return copy(dst, s)
	}
	n := copy(dst[:len(dst)-1], s)
	dst[n] = '~'
	return n + 1
}

func writeSlot(mem []byte, seq uint64, start, dur, code int64, name, args, codeName string, flags uint8) {
	slot := slotOf(mem, seq)
	le.PutUint64(slot[offSeq:], seq)
	le.PutUint64(slot[offStart:], uint64(start))
	slot[offNameLen] = uint8(putStr(slot[offName:offName+nameMax], name))
	le.PutUint16(slot[offArgsLen:], uint16(putStr(slot[offArgs:offArgs+argsMax], args)))
	finishSlot(slot, dur, code, codeName, "", flags)
}

// finishSlot stores the result; out is appended to the stored inputs.
func finishSlot(slot []byte, dur, code int64, codeName, out string, flags uint8) {
	le.PutUint64(slot[offDur:], uint64(dur))
	le.PutUint64(slot[offCode:], uint64(code))
	slot[offCodeLen] = uint8(putStr(slot[offCode2:offCode2+codeMax], codeName))
	if out != "" {
		n := int(le.Uint16(slot[offArgsLen:]))
		if n > 0 && n < argsMax-2 {
			n += copy(slot[offArgs+n:offArgs+argsMax], "; ")
		}
		if n < argsMax {
			n += putStr(slot[offArgs+n:offArgs+argsMax], out)
		}
		le.PutUint16(slot[offArgsLen:], uint16(n))
	}
	slot[offFlags] = flags
}

func str(b []byte, n int) string {
	n = min(n, len(b))
	return strings.ToValidUTF8(string(b[:n]), "?")
}

// decode returns the records with Seq > since, oldest first.
func decode(mem []byte, since uint64, now time.Time) []Record {
	var recs []Record
	for i := 0; i < Slots; i++ {
		slot := mem[headerSize+i*SlotSize : headerSize+(i+1)*SlotSize]
		seq := slotSeq(slot)
		if seq == 0 || seq <= since {
			continue
		}
		flags := slot[offFlags]
		r := Record{
			Seq:      seq,
			Start:    time.Unix(0, int64(le.Uint64(slot[offStart:]))),
			Dur:      time.Duration(le.Uint64(slot[offDur:])),
			Name:     str(slot[offName:offName+nameMax], int(slot[offNameLen])),
			Args:     str(slot[offArgs:offArgs+argsMax], int(le.Uint16(slot[offArgsLen:]))),
			Code:     int64(le.Uint64(slot[offCode:])),
			CodeName: str(slot[offCode2:offCode2+codeMax], int(slot[offCodeLen])),
			Err:      flags&flagErr != 0,
			InFlight: flags&flagInFlight != 0,
		}
		if r.InFlight {
			r.Dur = now.Sub(r.Start)
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b Record) int {
		if a.Seq < b.Seq {
			return -1
		}
		if a.Seq > b.Seq {
			return 1
		}
		return 0
	})
	return recs
}

// Decode reads a ring image (a shared ring's bytes): the records with
// Seq > since, oldest first, and the pid of the process that wrote it.
func Decode(mem []byte, since uint64) (recs []Record, pid int, err error) {
	if len(mem) < SharedSize || string(mem[0:8]) != magic {
		return nil, 0, errors.New("trace: not a trace ring (bad size or magic)")
	}
	if le.Uint32(mem[8:]) != Slots || le.Uint32(mem[12:]) != SlotSize {
		return nil, 0, errors.New("trace: ring geometry differs from this build")
	}
	return decode(mem, since, time.Now()), int(le.Uint32(mem[hdrPid:])), nil
}

// CreateShared makes a memfd holding an empty ring, for the parent to pass
// to a rank (ExtraFiles) and read back with ReadShared after the rank ends,
// however it ended. name labels the memfd in /proc/<pid>/fd.
func CreateShared(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate("p2patomics-trace-"+name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("trace: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "trace-"+name)
	if err := f.Truncate(SharedSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: ftruncate: %w", err)
	}
	hdr := make([]byte, headerSize)
	initHeader(hdr)
	le.PutUint32(hdr[hdrPid:], 0)
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return f, nil
}

// AttachShared moves this process's ring into the shared memory behind fd
// (a CreateShared memfd inherited from the parent). Records already taken
// are carried over. Call it once, early in the rank.
func AttachShared(fd int) error {
	// A mapping past the file's end faults on first touch (SIGBUS): an
	// fd shorter than the ring (an empty memfd) is refused instead.
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("trace: shared ring: %w", err)
	}
	if st.Size < SharedSize {
		return fmt.Errorf("trace: fd holds %d bytes, a trace ring needs %d", st.Size, SharedSize)
	}
	mem, err := syscall.Mmap(fd, 0, SharedSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("trace: mmap shared ring: %w", err)
	}
	if string(mem[0:8]) != magic || le.Uint32(mem[8:]) != Slots || le.Uint32(mem[12:]) != SlotSize {
		syscall.Munmap(mem)
		return errors.New("trace: fd does not hold a trace ring of this build")
	}
	ring.mu.Lock()
	defer ring.mu.Unlock()
	copy(mem, ring.mem)
	initHeader(mem)
	ring.mem = mem
	return nil
}

// ReadShared reads the ring a rank kept in a CreateShared memfd: the
// records with Seq > since, oldest first. Read it after the rank has ended
// (or was stopped) so that no record is half written.
func ReadShared(f *os.File, since uint64) ([]Record, error) {
	mem := make([]byte, SharedSize)
	if _, err := f.ReadAt(mem, 0); err != nil {
		return nil, fmt.Errorf("trace: read shared ring: %w", err)
	}
	recs, _, err := Decode(mem, since)
	return recs, err
}

// SharedWedged reads the sequence number of the record a rank's watchdog
// wrote when it found a call wedged (Wedge), 0 while it has found none: one
// pread, cheap enough for the parent to ask every few tens of milliseconds
// while it waits for the rank's reply.
func SharedWedged(f *os.File) (uint64, error) {
	var b [8]byte
	if _, err := f.ReadAt(b[:], hdrWedged); err != nil {
		return 0, fmt.Errorf("trace: read shared ring: %w", err)
	}
	return le.Uint64(b[:]), nil
}

// SharedSeq reads the last sequence number a rank handed out, from its
// shared ring; the parent notes it at a case's start to read only that
// case's calls later.
func SharedSeq(f *os.File) (uint64, error) {
	var b [8]byte
	if _, err := f.ReadAt(b[:], hdrLastSeq); err != nil {
		return 0, fmt.Errorf("trace: read shared ring: %w", err)
	}
	return le.Uint64(b[:]), nil
}
