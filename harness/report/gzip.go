package report

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// gzipMagic opens every gzip stream (RFC 1952); a JSON document cannot
// start with it, so a results.json.gz is known by its bytes, not its name.
var gzipMagic = []byte{0x1f, 0x8b}

// gunzipped is b itself, or, when b is a gzip stream (a committed run's
// results.json.gz), its content: at most MaxInput bytes, as ReadRegular
// caps a plain file, so a small archive cannot expand without bound.
func gunzipped(path string, b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, gzipMagic) {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(out)) > MaxInput {
		return nil, fmt.Errorf("%s expands over the %d-byte limit", path, int64(MaxInput))
	}
	return out, nil
}

// ReadRaw is a results.json's bytes as recorded: a regular file under
// MaxInput (ReadRegular), gunzipped when it is a committed run's
// results.json.gz, for a reader that edits or scans the JSON itself.
func ReadRaw(path string) ([]byte, error) {
	b, err := ReadRegular(path, MaxInput)
	if err != nil {
		return nil, err
	}
	return gunzipped(path, b)
}
