package report

import "testing"

func TestDriverLineAndFolder(t *testing.T) {
	for _, c := range [][3]string{
		{"nvidia", "580.159.04", "580"},
		{"nvidia", "580", "580"},
		{"amd", "6.8.5", "6.8"},
		{"amd", "6.1.0-28-amd64", "6.1"},
		{"amd", "weird", "weird"},
	} {
		if got := DriverLine(c[0], c[1]); got != c[2] {
			t.Errorf("DriverLine(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	if got := Folder(map[string]string{"vendor": "nvidia", "arch": "NVIDIA H200/x"}); got != "nvidia-nvidia_h200_x" {
		t.Errorf("Folder sanitising = %s", got)
	}
}
