package unwind

// MaxCallLen is the most code bytes before a return address that
// [AfterCall] looks at: the longest x86-64 call instruction without
// prefixes, FF /2 with a SIB byte and a 32-bit displacement.
const MaxCallLen = 7

// AfterCall reports whether code, the bytes just before a return address
// of an x86-64 stack (at most the last [MaxCallLen] are read), ends with a
// call instruction: E8 with a 32-bit displacement, or an FF /2 or FF /3
// whose ModRM, SIB and displacement end exactly at the return address.
// Prefixes (REX, addr32, notrack) come before the opcode and do not
// matter.
//
// A frame-pointer walk that leaves the real frames reads whatever the
// stack holds: a function pointer is as likely as a saved return address,
// and is named as the function before it. A real return address always
// follows a call, so false means the address is not one. True says
// little: any byte pattern may look like a call.
func AfterCall(code []byte) bool {
	if len(code) > MaxCallLen {
		code = code[len(code)-MaxCallLen:]
	}
	n := len(code)
	if n >= 5 && code[n-5] == 0xe8 {
		return true
	}
	for k := 2; k <= n; k++ {
		if code[n-k] == 0xff && indirectCallLen(code[n-k+1:]) == k {
			return true
		}
	}
	return false
}

// indirectCallLen returns the length of the call instruction FF /2 or
// FF /3 whose ModRM byte starts b, the opcode byte included, or 0 when
// b's ModRM is not a call's or b is too short to tell.
func indirectCallLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	modrm := b[0]
	if reg := modrm >> 3 & 7; reg != 2 && reg != 3 {
		return 0
	}
	mod, rm := modrm>>6, modrm&7
	n := 2 // opcode and ModRM
	if mod == 3 {
		return n // a register operand
	}
	if rm == 4 { // a SIB byte follows
		if len(b) < 2 {
			return 0
		}
		n++
		if mod == 0 && b[1]&7 == 5 {
			n += 4 // no base: a 32-bit displacement
		}
	}
	switch {
	case mod == 1:
		n++
	case mod == 2:
		n += 4
	case rm == 5: // mod 0: RIP-relative
		n += 4
	}
	return n
}
