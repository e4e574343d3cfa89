#include "textflag.h"

// func dotNormBlock8(v, q unsafe.Pointer, dim, n int, out unsafe.Pointer)
// For each of n vectors of dim values (dim a multiple of 8, at least 8),
// stored one after another at v, writes Σ v·q and Σ v·v to out[2i] and
// out[2i+1].
TEXT ·dotNormBlock8(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), SI
	MOVQ dim+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ out+32(FP), R10
	TESTQ R9, R9
	JE done
vec:
	MOVQ q+8(FP), DI
	MOVQ R8, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ CX, $16
	JL btail
bloop16:
	// The vectors stream from memory (the Index's cache): ask for the
	// line 8 KiB ahead into L2, which the hardware prefetcher alone
	// fetches too late to keep the loads fed.
	PREFETCHT1 8192(SI)
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS Y4, Y4, Y2
	VFMADD231PS Y5, Y5, Y3
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE bloop16
btail:
	TESTQ CX, CX
	JE breduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS Y4, Y4, Y2
	ADDQ $32, SI
breduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VADDPS X3, X2, X2
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VMOVSS X0, (R10)
	VMOVSS X2, 4(R10)
	ADDQ $8, R10
	DECQ R9
	JNE vec
	VZEROUPPER
done:
	RET

// func dotBlock8(v, q unsafe.Pointer, dim, n int, out unsafe.Pointer)
// dotNormBlock8 without the norms: writes Σ v·q of each vector to out[i],
// summed in exactly dotNormBlock8's order, so the two give equal dots.
TEXT ·dotBlock8(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), SI
	MOVQ dim+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ out+32(FP), R10
	TESTQ R9, R9
	JE ddone
dvec:
	MOVQ q+8(FP), DI
	MOVQ R8, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ CX, $16
	JL dtail
dloop16:
	PREFETCHT1 8192(SI)
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE dloop16
dtail:
	TESTQ CX, CX
	JE dreduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
dreduce:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (R10)
	ADDQ $4, R10
	DECQ R9
	JNE dvec
	VZEROUPPER
ddone:
	RET
