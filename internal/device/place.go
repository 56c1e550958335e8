package device

import (
	"fmt"
	"strings"
)

// AnyDevice is the device a hello asks rank 0 to open when the parent does
// not yet know which devices can run the kernels: the backend opens the
// first device Place finds usable and reports its ordinal (Info.Ordinal).
// Rank 0's hello is the first moment the parent learns what the devices
// are, and a device without a code object cannot be opened for work, so
// the choice for rank 0 is made where the list is (issue 40, review 3 P10).
const AnyDevice = -1

// Visible is one device a rank's backend can see, in the backend's
// ordinal order: what placement decides on.
type Visible struct {
	Ordinal int    `json:"ordinal"`
	Arch    string `json:"arch"` // the key kernels.ForArch takes
	Name    string `json:"name,omitempty"`
}

func (v Visible) String() string {
	s := fmt.Sprintf("device %d (%s", v.Ordinal, v.Arch)
	if v.Name != "" {
		s += ", " + v.Name
	}
	return s + ")"
}

// Placement is which visible devices ranks may go on, in ordinal order,
// and the devices left out, each with why.
type Placement struct {
	Usable  []int
	LeftOut []string
}

// Place keeps the devices whose architecture has a code object (usable
// answers nil: kernels.Usable) and names each one left out with usable's
// reason. Ranks go on Usable in order (rank r on Usable[r mod len]), so an
// enabled iGPU listed before the dGPUs (a Ryzen gfx1036, for which no
// object ships) takes no rank. None usable is an error naming every
// architecture found and the targets the kernels ship.
func Place(devs []Visible, usable func(arch string) error, shipped []string) (Placement, error) {
	var p Placement
	var found []string
	for _, d := range devs {
		if err := usable(d.Arch); err != nil {
			p.LeftOut = append(p.LeftOut, fmt.Sprintf("%s: %v", d, err))
			found = append(found, d.String())
			continue
		}
		p.Usable = append(p.Usable, d.Ordinal)
	}
	if len(p.Usable) == 0 {
		if len(found) == 0 {
			return p, fmt.Errorf("no device visible to place ranks on")
		}
		return p, fmt.Errorf("no visible device has a kernel code object: found %s; the kernels ship %s", strings.Join(found, ", "), strings.Join(shipped, ", "))
	}
	return p, nil
}

// On is the device rank r goes on under p: ranks cycle over the usable
// devices in order (several ranks share one when there are fewer).
func (p Placement) On(r int) int { return p.Usable[r%len(p.Usable)] }
