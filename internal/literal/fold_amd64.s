#include "textflag.h"

// func foldPairBlocks(b []byte, blocks int, w1, m1, w2, m2 byte, dist int) int
// For 32 positions at a time, the bytes at i and at i+dist are ORed with
// their masks and compared with w1 and w2; the first position where both
// are equal is returned, or -1 after blocks*32 positions.
TEXT ·foldPairBlocks(SB), NOSPLIT, $0-56
	MOVQ b_base+0(FP), SI
	MOVQ blocks+24(FP), CX
	MOVQ dist+40(FP), DX
	VPBROADCASTB w1+32(FP), Y0
	VPBROADCASTB m1+33(FP), Y1
	VPBROADCASTB w2+34(FP), Y2
	VPBROADCASTB m2+35(FP), Y3
	MOVQ SI, DI
loop:
	VMOVDQU (SI), Y4
	VPOR Y1, Y4, Y4
	VPCMPEQB Y0, Y4, Y4
	VMOVDQU (SI)(DX*1), Y5
	VPOR Y3, Y5, Y5
	VPCMPEQB Y2, Y5, Y5
	VPAND Y4, Y5, Y4
	VPMOVMSKB Y4, AX
	TESTL AX, AX
	JNZ found
	ADDQ $32, SI
	DECQ CX
	JNZ loop
	MOVQ $-1, ret+48(FP)
	VZEROUPPER
	RET
found:
	BSFL AX, AX
	SUBQ DI, SI
	ADDQ SI, AX
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET
