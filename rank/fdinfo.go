package rank

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// FdInfo reads /proc/self/fdinfo/<fd> into key/value pairs and closes fd.
// A dma-buf fd shows exp_name (the exporter) and size there, which is how a
// peer confirms it holds the same buffer without mapping it.
func FdInfo(fd int) (map[string]string, error) {
	defer unix.Close(fd)
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return nil, fmt.Errorf("fdinfo: %w", err)
	}
	defer f.Close()
	info := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			info[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil {
		info["link"] = link
	}
	return info, sc.Err()
}
