package trace

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// ArgSpec says what the trace records of one entry point's arguments: one
// word per argument, in order, separated by spaces (the one grammar every vendor
// binding uses in its symbol table):
//
//	name      an input, in decimal (a pointer: what it points at; a
//	          struct as %+v)
//	name:x    an input in hex (handles, device pointers, flags)
//	name:s    a *byte input: the NUL-terminated C string it points at
//	>name     an output: what the pointer argument points at after a
//	          successful call (>name:x in hex; >name:i32 reads an
//	          unsafe.Pointer as a C int)
//	-         not recorded
//
// uintptr and unsafe.Pointer values are always in hex. The spec is parsed
// once, when the symbol is bound; formatting runs only while tracing is on.
type ArgSpec []argWord

type argWord struct {
	name                 string
	out, hex, cstr, skip bool
	i32                  bool
}

func ParseArgs(s string) ArgSpec {
	var p ArgSpec
	for _, w := range strings.Fields(s) {
		var a argWord
		if w == "-" {
			a.skip = true
			p = append(p, a)
			continue
		}
		if rest, ok := strings.CutPrefix(w, ">"); ok {
			a.out, w = true, rest
		}
		if name, mod, ok := strings.Cut(w, ":"); ok {
			w = name
			switch mod {
			case "x":
				a.hex = true
			case "s":
				a.cstr = true
			case "i32":
				a.i32 = true
			default:
				panic("ArgSpec: unknown modifier :" + mod + " in " + s)
			}
		}
		a.name = w
		p = append(p, a)
	}
	return p
}

// format returns "name=value, ..." for the inputs (out false) or the
// outputs (out true) among args.
func (p ArgSpec) Format(out bool, args ...any) string {
	var b strings.Builder
	for i, arg := range args {
		if i >= len(p) {
			break
		}
		w := p[i]
		if w.skip || w.out != out {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(w.name)
		b.WriteByte('=')
		v := reflect.ValueOf(arg)
		switch {
		case w.i32 && v.Kind() == reflect.UnsafePointer:
			if v.UnsafePointer() == nil {
				b.WriteString("nil")
			} else {
				b.WriteString(strconv.Itoa(int(*(*int32)(v.UnsafePointer()))))
			}
			continue
		case w.cstr && v.Kind() == reflect.Pointer:
			b.WriteString(strconv.Quote(cStringAt(v.UnsafePointer(), 256)))
			continue
		case out:
			if v.Kind() != reflect.Pointer || v.IsNil() {
				b.WriteString("nil")
				continue
			}
			v = v.Elem()
		}
		writeValue(&b, v, w.hex)
	}
	return b.String()
}

func writeValue(b *strings.Builder, v reflect.Value, hex bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if hex {
			b.WriteString(Hex(uint64(v.Int())))
		} else {
			b.WriteString(strconv.FormatInt(v.Int(), 10))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if hex {
			b.WriteString(Hex(v.Uint()))
		} else {
			b.WriteString(strconv.FormatUint(v.Uint(), 10))
		}
	case reflect.Uintptr:
		b.WriteString(Hex(v.Uint()))
	case reflect.UnsafePointer:
		b.WriteString(Hex(uintptr(v.UnsafePointer())))
	case reflect.Pointer:
		switch {
		case v.IsNil():
			b.WriteString("nil")
		case v.Elem().Kind() == reflect.Struct:
			fmt.Fprintf(b, "%+v", v.Elem().Interface())
		default:
			// A pointer to one value (the first of an array): the value.
			writeValue(b, v.Elem(), hex)
		}
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			for i := 0; i < v.Len(); i++ {
				fmt.Fprintf(b, "%02x", v.Index(i).Uint())
			}
			return
		}
		fmt.Fprintf(b, "%v", v.Interface())
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}

// cStringAt reads a NUL-terminated C string of at most max bytes.
func cStringAt(p unsafe.Pointer, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
