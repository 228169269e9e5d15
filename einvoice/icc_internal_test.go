package einvoice

import (
	"encoding/binary"
	"testing"
)

// TestSRGBProfileIsWellFormed reads the output intent's ICC profile back
// by the ICC.1 layout: its size, signature, classes, and every tag inside
// the profile, 4-byte aligned, with its type signature.
func TestSRGBProfileIsWellFormed(t *testing.T) {
	p := srgbProfile()
	be := binary.BigEndian
	if int(be.Uint32(p)) != len(p) || string(p[36:40]) != "acsp" || string(p[12:16]) != "mntr" || string(p[16:20]) != "RGB " ||
		string(p[20:24]) != "XYZ " || be.Uint32(p[8:]) != 0x02100000 {
		t.Fatalf("bad header % x", p[:128])
	}
	n := int(be.Uint32(p[128:]))
	types := map[string]string{"desc": "desc", "cprt": "text", "wtpt": "XYZ ", "rXYZ": "XYZ ", "gXYZ": "XYZ ", "bXYZ": "XYZ ",
		"rTRC": "curv", "gTRC": "curv", "bTRC": "curv"}
	if n != len(types) {
		t.Fatalf("%d tags, want %d", n, len(types))
	}
	for i := range n {
		e := p[132+12*i:]
		sig, off, size := string(e[:4]), int(be.Uint32(e[4:])), int(be.Uint32(e[8:]))
		if off%4 != 0 || off+size > len(p) || off < 132+12*n {
			t.Fatalf("tag %s at %d, %d bytes: outside the profile or unaligned", sig, off, size)
		}
		if got := string(p[off : off+4]); got != types[sig] {
			t.Errorf("tag %s has type %q, want %q", sig, got, types[sig])
		}
	}
}
