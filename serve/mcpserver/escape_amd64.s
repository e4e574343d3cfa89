//go:build amd64 && !purego

#include "textflag.h"

// func escapeASCII(dst []byte, s string) (consumed, written int)
//
// Escapes the ASCII text at the start of s into dst, 32 bytes at a time
// (AVX2). A block without a byte that needs attention is stored as it is.
// Otherwise the escapes in it (control characters, '"', '\\': the bits of
// a mask, from asciiEscapes) are written in turn, each after the run before
// it, and a byte of 0x80 or more ends the call there. Runs are copied from
// s with 32-byte loads and stores: the extra bytes are overwritten by what
// follows or lie past the returned length, which is why the loop needs 64
// bytes of s (a run may start anywhere in a block) and 256 bytes of room
// in dst (32 escapes of six bytes, then a run).
//
// It returns when fewer than 64 bytes of s are left, when dst has fewer
// than 256 bytes of room, or at a byte of 0x80 or more; the caller handles
// what is left. The caller guarantees AVX2.
TEXT ·escapeASCII(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R13
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), R12
	CMPQ R12, $64
	JLT  short
	CMPQ R13, $256
	JLT  short
	LEAQ -64(SI)(R12*1), R12  // the last block start in s
	LEAQ -256(DI)(R13*1), R13 // the last block start with room in dst
	LEAQ ·asciiEscapes(SB), R11

	MOVL         $0x1f1f1f1f, AX
	MOVD         AX, X4
	VPBROADCASTD X4, Y4
	MOVL         $0x22222222, AX
	MOVD         AX, X5
	VPBROADCASTD X5, Y5
	MOVL         $0x5c5c5c5c, AX
	MOVD         AX, X6
	VPBROADCASTD X6, Y6

loop:
	CMPQ      SI, R12
	JHI       done
	CMPQ      DI, R13
	JHI       done
	VMOVDQU   (SI), Y0
	VPMINUB   Y4, Y0, Y1  // min(b, 0x1f)
	VPCMPEQB  Y1, Y0, Y1  // b <= 0x1f
	VPCMPEQB  Y5, Y0, Y2  // b == '"'
	VPCMPEQB  Y6, Y0, Y3  // b == '\\'
	VPOR      Y2, Y1, Y1
	VPOR      Y3, Y1, Y1
	VPMOVMSKB Y1, AX      // the bytes to escape
	VPMOVMSKB Y0, DX      // the bytes of 0x80 or more
	MOVL      AX, BX
	ORL       DX, BX
	JNZ       block
	VMOVDQU   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	JMP       loop

block:
	MOVL  $32, R8 // where the block's ASCII ends
	TESTL DX, DX
	JZ    escapes
	BSFL  DX, R8
	MOVL  R8, CX
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	ANDL  BX, AX  // only the escapes before it

escapes:
	XORL R9, R9 // where the current run starts in the block

next:
	TESTL   AX, AX
	JZ      rest
	BSFL    AX, BX // the next escape
	VMOVDQU (SI)(R9*1), Y2
	VMOVDQU Y2, (DI)
	MOVQ    BX, CX
	SUBQ    R9, CX
	ADDQ    CX, DI
	MOVBLZX (SI)(BX*1), CX
	// The escape's bytes, its length in the top byte: what follows it
	// is overwritten.
	MOVQ    (R11)(CX*8), CX
	MOVQ    CX, (DI)
	SHRQ    $56, CX
	ADDQ    CX, DI
	LEAQ    1(BX), R9
	LEAL    -1(AX), CX
	ANDL    CX, AX
	JMP     next

rest:
	VMOVDQU (SI)(R9*1), Y2
	VMOVDQU Y2, (DI)
	MOVQ    R8, CX
	SUBQ    R9, CX
	ADDQ    CX, DI
	ADDQ    R8, SI
	CMPQ    R8, $32
	JEQ     loop

done:
	VZEROUPPER

short:
	SUBQ s_base+24(FP), SI
	SUBQ dst_base+0(FP), DI
	MOVQ SI, consumed+40(FP)
	MOVQ DI, written+48(FP)
	RET
