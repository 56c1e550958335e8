package hsa

import "p2patomics/trace"

// The argument grammar of the symbol table lives in package trace, shared by
// every binding.
type argSpec = trace.ArgSpec

var parseSpec = trace.ParseArgs
