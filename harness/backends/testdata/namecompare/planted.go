// Package planted holds the name compares TestNoNameCompareOutsideTheRows
// must report (each line marked "want"), and property reads it must not.
package planted

import (
	"strings"

	descriptors "p2patomics/harness/backends"
)

func compares(name, vendor string) int {
	n := 0
	if name == descriptors.HostName { // want
		n++
	}
	if descriptors.CUDAName != name { // want
		n++
	}
	if vendor == descriptors.Host.Vendor { // want
		n++
	}
	if strings.EqualFold(vendor, descriptors.HIP.Vendor) { // want
		n++
	}
	switch name {
	case descriptors.HSAName: // want
		n++
	}
	if descriptors.IsGPU(name) || descriptors.Driverless(vendor) { // a property: fine
		n++
	}
	return n
}
