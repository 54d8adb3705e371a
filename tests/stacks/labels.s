/* Symbols without a size (assembly labels) beside sized ones, in two code
 * sections, for the symbol-table index's fallback (test_elf_symbols.c):
 *   - a label inside a sized function, below that function's end: never
 *     the answer past the function (dwfl's labels must start at or above
 *     every end below the address);
 *   - local and global labels, two global labels at one address, and a
 *     global and a local one at one address (past it dwfl names the local:
 *     it searches the locals after the globals and keeps the last);
 *   - a second section whose first bytes have only the first section's
 *     labels below them: no answer there (a label names addresses of its
 *     own section only). */
	.text
	.globl	sized_fn
	.type	sized_fn, @function
sized_fn:
	.fill	8, 1, 0x90
inside_label:
	.fill	8, 1, 0x90
	.size	sized_fn, 16
	.fill	16, 1, 0x90		/* past sized_fn: no label in reach */
local_label:
	.fill	32, 1, 0x90
	.globl	global_label
global_label:
	.fill	32, 1, 0x90
	.globl	twin_a
	.globl	twin_b
twin_a:
twin_b:
	.fill	32, 1, 0x90
	.globl	mixed_global
mixed_global:
mixed_local:
	.fill	32, 1, 0x90
	.globl	other_fn
	.type	other_fn, @function
other_fn:
	.fill	16, 1, 0x90
	.size	other_fn, 16
after_other:
	.fill	32, 1, 0x90

	.section .code2, "ax", @progbits
	.fill	32, 1, 0x90		/* only .text's labels below these */
code2_label:
	.fill	32, 1, 0x90
	.section .note.GNU-stack, "", @progbits
